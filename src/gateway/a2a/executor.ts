/**
 * The A2A side of the gateway's tools (the SDK's AgentExecutor): a message
 * is one call of a tool, its task the call. Without a skill it is a
 * `converse` turn in the session named by the task's contextId; with
 * `metadata.skill` naming a recipe it is a run of that recipe, its inputs
 * the message's data part. The call's stage changes are `working` status
 * updates (progress.ts's stageReporter), its result the task's end (outcome.ts). A run that
 * waits for a person leaves the task input-required; the next message in
 * the task answers it (answer.ts). tasks/cancel aborts the call (its turn or
 * run is cancelled in Conclave); on a task whose run waits (input-required),
 * it cancels the suspended run in Conclave (it ends `Cancelled` where it
 * waits; an answer to it is refused from then on) and the task ends canceled.
 */
import { createHash } from "node:crypto";
import { TaskState } from "@a2a-js/sdk";
import { TaskNotCancelableError } from "@a2a-js/sdk/errors";
import type { AgentExecutor, ExecutionEventBus, RequestContext } from "@a2a-js/sdk/server";
import type { ConclaveClient } from "../../client/client.ts";
import { messageOf } from "../../errors.ts";
import { type GatewayClients, type Principal, runtimeSessionOf } from "../principals.ts";
import { type ProgressReporter, stageReporter } from "../progress.ts";
import { errorResult, type ToolResult } from "../results.ts";
import { callTool, describeCallFailure, type GatewayTool } from "../tools.ts";
import { answerWaitingRun } from "./answer.ts";
import { principalOfContext } from "./callContext.ts";
import { howToAnswerInA2a, taskEnd, type WaitingRun } from "./outcome.ts";
import { dataOf, metadataString, statusUpdate, submittedTask, type TaskIds, textOf, textPart } from "./parts.ts";

/** The reason recorded in a turn or run the A2A client cancels. */
const CANCEL_REASON = "cancelled by the A2A client";

/** What the executor serves. */
export interface ExecutorOptions {
  /** The client each principal talks through (principals.ts). */
  clients: GatewayClients;
  tools: readonly GatewayTool[];
  /** Patience for answering a waiting run, in ms (the tools have their own). */
  timeoutMs: number;
  onError?: (error: unknown) => void;
}

/** A conversation's session id: the contextId itself when it is one (so a client may name it), else a digest of it. */
export function sessionIdOf(contextId: string): string {
  if (/^[A-Za-z0-9_-]{1,64}$/.test(contextId)) return contextId;
  return `a2a-${createHash("sha256").update(contextId).digest("hex").slice(0, 24)}`;
}

/** Conclave's tools as an A2A agent. */
export class ConclaveAgentExecutor implements AgentExecutor {
  private readonly byName: Map<string, GatewayTool>;
  /** Calls running, by task: aborting one cancels its turn or run. */
  private readonly running = new Map<string, AbortController>();
  /** Tasks whose run waits for a person, by task, with the principal whose task it is. */
  private readonly waiting = new Map<string, WaitingRun & { contextId: string; principal: Principal }>();
  /** The sessions each task's calls worked in, by task, as the runtime names them (to drop it when one is erased). */
  private readonly sessions = new Map<string, Set<string>>();

  constructor(private readonly options: ExecutorOptions) {
    this.byName = new Map(options.tools.map((tool) => [tool.name, tool]));
  }

  readonly execute = async (context: RequestContext, bus: ExecutionEventBus): Promise<void> => {
    const ids: TaskIds = { taskId: context.taskId, contextId: context.contextId };
    const message = context.userMessage;
    const principal = principalOfContext(context.context);
    const client = await this.options.clients.for(principal);
    // Task ids are the store's, scoped by principal: a waiting run is answered only by the one whose task it is.
    const held = this.waiting.get(ids.taskId);
    const waiting = held?.principal.name === principal.name ? held : undefined;
    const skill =
      metadataString("skill", message.metadata, context.request.metadata) ??
      (context.task?.metadata?.skill as string | undefined) ??
      "converse";
    bus.publish(context.task ? { kind: "task", data: context.task } : submittedTask(ids, message, { skill }));
    const controller = new AbortController();
    this.running.set(ids.taskId, controller);
    const progress = stageReporter(({ message: line }) => {
      if (!controller.signal.aborted) bus.publish(statusUpdate(ids, TaskState.TASK_STATE_WORKING, [textPart(line)]));
    });
    try {
      bus.publish(statusUpdate(ids, TaskState.TASK_STATE_WORKING));
      let result: ToolResult;
      if (waiting) {
        this.waiting.delete(ids.taskId);
        // Answered, the run runs again: a cancel now cancels it in Conclave.
        const cancelRun = () => {
          client
            .cancel(waiting.sessionId, waiting.turnId, CANCEL_REASON)
            .catch((error: unknown) => this.options.onError?.(error));
        };
        controller.signal.addEventListener("abort", cancelRun, { once: true });
        try {
          result = await answerWaitingRun(client, waiting, message, {
            progress,
            timeoutMs: this.options.timeoutMs,
            principal,
          });
        } catch (error) {
          // The answer was refused (a wrong role, a malformed answer): the run still waits, and so does the task.
          this.waiting.set(ids.taskId, { ...waiting, contextId: ids.contextId, principal });
          const why = `the answer was not taken: ${describeCallFailure(error)}; ${howToAnswerInA2a(ids, waiting)}`;
          bus.publish(statusUpdate(ids, TaskState.TASK_STATE_INPUT_REQUIRED, [textPart(why)]));
          return;
        } finally {
          controller.signal.removeEventListener("abort", cancelRun);
          progress.flush();
        }
      } else result = await this.call(skill, context, { client, principal, signal: controller.signal, progress });
      const end = taskEnd(ids, skill, result, controller.signal.aborted);
      if (end.waiting) this.waiting.set(ids.taskId, { ...end.waiting, contextId: ids.contextId, principal });
      for (const event of end.events) bus.publish(event);
    } catch (error) {
      this.options.onError?.(error);
      bus.publish(statusUpdate(ids, TaskState.TASK_STATE_FAILED, [textPart(`${skill}: ${messageOf(error)}`)]));
    } finally {
      this.running.delete(ids.taskId);
      bus.finished();
    }
  };

  /** Calls the tool the message names, with the message as its arguments. */
  private call(
    skill: string,
    context: RequestContext,
    as: { client: ConclaveClient; principal: Principal; signal: AbortSignal; progress: ProgressReporter },
  ): Promise<ToolResult> {
    const tool = this.byName.get(skill);
    if (!tool)
      return Promise.resolve(
        errorResult(`unknown skill '${skill}'; the skills are: ${[...this.byName.keys()].join(", ")}`),
      );
    const message = context.userMessage;
    let args: Record<string, unknown>;
    if (skill === "converse") args = { session_id: sessionIdOf(context.contextId), text: textOf(message) };
    else {
      const data = dataOf(message)?.value;
      if (data !== undefined && (typeof data !== "object" || data === null || Array.isArray(data)))
        return Promise.resolve(errorResult(`${skill}: the data part must be an object of the recipe's inputs`));
      args = (data as Record<string, unknown> | undefined) ?? {};
    }
    const { client, principal, signal, progress } = as;
    const onSession = (session: string) => {
      const runtime = runtimeSessionOf(principal, session);
      const known = this.sessions.get(context.taskId);
      if (known) known.add(runtime);
      else this.sessions.set(context.taskId, new Set([runtime]));
    };
    return callTool(tool, client, args, { signal, progress, principal, onSession });
  }

  readonly cancelTask = async (taskId: string, bus: ExecutionEventBus): Promise<void> => {
    const running = this.running.get(taskId);
    if (running) {
      // The call ends Cancelled in Conclave, then execute publishes the task's canceled state.
      running.abort(CANCEL_REASON);
      return;
    }
    const waiting = this.waiting.get(taskId);
    if (!waiting) return;
    // No process holds a suspended run: Conclave ends it Cancelled where it waits, and the task ends with it.
    const run = `${waiting.sessionId}/${waiting.turnId}`;
    const client = await this.options.clients.for(waiting.principal);
    const cancelled = await client.cancel(waiting.sessionId, waiting.turnId, CANCEL_REASON);
    this.waiting.delete(taskId);
    // It ended otherwise meanwhile (its node's timeout went on to the end): the task says so, not canceled.
    if (cancelled.status === "finished" && cancelled.outcome !== "Cancelled")
      throw new TaskNotCancelableError(`run ${run} had already ended (${cancelled.outcome ?? "finished"})`);
    const ids: TaskIds = { taskId, contextId: waiting.contextId };
    bus.publish(statusUpdate(ids, TaskState.TASK_STATE_CANCELED, [textPart(`run ${run} cancelled: ${CANCEL_REASON}`)]));
    bus.finished();
  };

  /** Drops what is held for a task the store forgot: an input-required task can no longer be answered here. */
  forget(taskId: string): void {
    this.waiting.delete(taskId);
    this.sessions.delete(taskId);
  }

  /** Whether a call of the task worked in the session (its runtime id: `<tenant>-<session>` for a tenant's). */
  workedIn(taskId: string, sessionId: string): boolean {
    return this.sessions.get(taskId)?.has(sessionId) === true;
  }

  /** Cancels every call running (the gateway closes). */
  abortAll(): void {
    for (const controller of this.running.values()) controller.abort("the gateway closed");
  }
}
