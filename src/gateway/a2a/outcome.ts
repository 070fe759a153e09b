/**
 * A gateway tool's result (results.ts) as the end of an A2A task: completed
 * with the reply or the run's output as an artifact, input-required for a
 * run that waits at a human node or for an approval (saying how to answer
 * it in the same task), failed, or canceled.
 */
import { type Part, TaskState } from "@a2a-js/sdk";
import type { AgentExecutionEvent } from "@a2a-js/sdk/server";
import type { ToolResult } from "../results.ts";
import { artifactUpdate, dataPart, statusUpdate, type TaskIds, textPart } from "./parts.ts";

/** A run waiting for a person, as the task remembers it until answered. */
export interface WaitingRun {
  sessionId: string;
  turnId: number;
  /** It waits for a tool call's approval (answered with `{approved: true|false}`), not at a human node. */
  approval: boolean;
  requiredRole?: string;
}

/** How a task ended, its events in order, and the run it waits for when input-required. */
export interface TaskEnd {
  events: AgentExecutionEvent[];
  waiting: WaitingRun | null;
}

const textOfResult = (result: ToolResult) => result.content.map((item) => item.text).join("\n");

/** How to answer a waiting run in A2A: a follow-up message in the same task. */
export function howToAnswerInA2a(ids: TaskIds, waiting: WaitingRun): string {
  const role = waiting.requiredRole ? `, metadata {"role": "${waiting.requiredRole}", "user_id": "<you>"}` : "";
  const answer = waiting.approval
    ? 'a data part {"approved": true} (or false, with an optional "reason")'
    : "a data part holding the answer (any JSON; or a text part)";
  return `send a message in task ${ids.taskId} with ${answer}${role}`;
}

/** The events that end a task with `result`; `cancelled` when the client cancelled it. */
export function taskEnd(ids: TaskIds, skill: string, result: ToolResult, cancelled: boolean): TaskEnd {
  const text = textOfResult(result);
  if (cancelled) return { events: [statusUpdate(ids, TaskState.TASK_STATE_CANCELED, [textPart(text)])], waiting: null };
  if (result.isError)
    return { events: [statusUpdate(ids, TaskState.TASK_STATE_FAILED, [textPart(text)])], waiting: null };
  const structured = result.structuredContent ?? {};
  if (structured.status === "suspended") {
    const waiting: WaitingRun = {
      sessionId: String(structured.session_id),
      turnId: Number(structured.turn_id),
      approval: structured.approval !== undefined,
      ...(typeof structured.required_role === "string" ? { requiredRole: structured.required_role } : {}),
    };
    const answerInA2a = howToAnswerInA2a(ids, waiting);
    const parts: Part[] = [
      textPart(`${text}\nor, here: ${answerInA2a}`),
      dataPart({ ...structured, answer_in_a2a: answerInA2a }),
    ];
    return { events: [statusUpdate(ids, TaskState.TASK_STATE_INPUT_REQUIRED, parts)], waiting };
  }
  const replyParts =
    skill === "converse" ? [textPart(text), dataPart(structured)] : [dataPart(structured), textPart(text)];
  return {
    events: [
      artifactUpdate(ids, skill === "converse" ? "reply" : "output", replyParts),
      statusUpdate(ids, TaskState.TASK_STATE_COMPLETED, [textPart(text)]),
    ],
    waiting: null,
  };
}
