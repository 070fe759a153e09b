/**
 * A2A messages, parts and task events as the SDK's objects (its protobuf
 * shapes, camelCase, parts as `{content: {$case, value}}`): what the
 * executor reads from a client's message and what it publishes back.
 */
import { randomUUID } from "node:crypto";
import { type Artifact, type Message, type Part, Role, type Task, TaskState } from "@a2a-js/sdk";
import { AgentEvent, type AgentExecutionEvent } from "@a2a-js/sdk/server";

/** A text part. */
export function textPart(text: string): Part {
  return { content: { $case: "text", value: text }, metadata: undefined, filename: "", mediaType: "text/plain" };
}

/** A JSON part. */
export function dataPart(value: unknown): Part {
  return { content: { $case: "data", value }, metadata: undefined, filename: "", mediaType: "application/json" };
}

/** The text of a message's text parts, joined by blank lines. */
export function textOf(message: Message): string {
  return message.parts
    .flatMap((part) => (part.content?.$case === "text" ? [part.content.value] : []))
    .join("\n\n")
    .trim();
}

/** The value of a message's first data part, if it has one. */
export function dataOf(message: Message): { value: unknown } | null {
  for (const part of message.parts) if (part.content?.$case === "data") return { value: part.content.value };
  return null;
}

/** A string field of a message's metadata (or the request's), if set. */
export function metadataString(
  field: string,
  ...sources: ({ [key: string]: unknown } | undefined)[]
): string | undefined {
  for (const source of sources) {
    const value = source?.[field];
    if (typeof value === "string" && value !== "") return value;
  }
  return undefined;
}

/** Where the executor's events go: one task of one context. */
export interface TaskIds {
  taskId: string;
  contextId: string;
}

/** A message of the agent, within the task. */
export function agentMessage(ids: TaskIds, parts: Part[]): Message {
  return {
    messageId: randomUUID(),
    contextId: ids.contextId,
    taskId: ids.taskId,
    role: Role.ROLE_AGENT,
    parts,
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

/** A new task, submitted, its history the client's first message. */
export function submittedTask(ids: TaskIds, first: Message, metadata: Record<string, unknown>): AgentExecutionEvent {
  const task: Task = {
    id: ids.taskId,
    contextId: ids.contextId,
    status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: new Date().toISOString() },
    artifacts: [],
    history: [first],
    metadata,
  };
  return AgentEvent.task(task);
}

/** The task's state changes, with a message of the agent when there is something to say. */
export function statusUpdate(ids: TaskIds, state: TaskState, parts: Part[] = []): AgentExecutionEvent {
  return AgentEvent.statusUpdate({
    taskId: ids.taskId,
    contextId: ids.contextId,
    status: {
      state,
      message: parts.length > 0 ? agentMessage(ids, parts) : undefined,
      timestamp: new Date().toISOString(),
    },
    metadata: undefined,
  });
}

/** The task's one artifact, whole: the reply of a turn or the output of a run. */
export function artifactUpdate(ids: TaskIds, name: string, parts: Part[]): AgentExecutionEvent {
  const artifact: Artifact = {
    artifactId: `${ids.taskId}-${name}`,
    name,
    description: "",
    parts,
    metadata: undefined,
    extensions: [],
  };
  return AgentEvent.artifactUpdate({
    taskId: ids.taskId,
    contextId: ids.contextId,
    artifact,
    append: false,
    lastChunk: true,
    metadata: undefined,
  });
}
