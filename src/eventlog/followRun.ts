/**
 * Following a turn's events on the log until its run completes or waits for
 * a person: what a client's `run` and `resume` return, and what a runner's
 * schedule loop waits for before judging a schedule's convergence.
 */
import { jetstream } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import { subjects } from "../bus/subjects.ts";
import type { EngineEvent } from "../contracts/events.ts";
import type { JsonObject, ToolApproval } from "../contracts/recipeRun.ts";
import type { TurnOutcome } from "../contracts/turn.ts";
import { deadlineSignal } from "../deadline.ts";
import { ConclaveError } from "../errors.ts";
import { eventStreamCount } from "./eventStreams.ts";
import { followEvents } from "./reader.ts";

/** Raised when a turn does not complete within the caller's patience. */
export class TurnTimeoutError extends ConclaveError<"turn_timeout"> {
  readonly sessionId: string;
  readonly turnId: number;
  constructor(sessionId: string, turnId: number, timeoutMs: number) {
    super("turn_timeout", `turn ${sessionId}/${turnId} did not complete within ${timeoutMs} ms`);
    this.sessionId = sessionId;
    this.turnId = turnId;
  }
}

/** Where a recipe run stands when `run` or `resume` returns. */
export type RecipeRunResult =
  | {
      status: "completed";
      sessionId: string;
      turnId: number;
      outcome: TurnOutcome;
      /** The final blackboard. */
      output: JsonObject;
      response: string;
    }
  | {
      /** Waiting at a human node for `resume` (or its timeout). */
      status: "suspended";
      sessionId: string;
      turnId: number;
      node: string;
      prompt: string;
      requiredRole?: string;
      /** Epoch ms after which the node times out. */
      expiresAt?: number;
      /** What it waits for is a tool call's approval (answer with `approve` or `deny`). */
      approval?: ToolApproval;
    };

/**
 * Follows a run's events after `afterSeq` until it completes or suspends
 * again. Rejects with TurnTimeoutError when neither happens in time.
 */
export async function followRun(
  nc: NatsConnection,
  sessionId: string,
  turnId: number,
  options: { afterSeq?: number; onEvent?: (event: EngineEvent) => void; timeoutMs?: number } = {},
): Promise<RecipeRunResult> {
  const timeoutMs = options.timeoutMs ?? 120_000;
  const deadline = deadlineSignal(timeoutMs);
  let result: RecipeRunResult | null = null;
  let prompt: { node: string; prompt: string; required_role?: string; approval?: ToolApproval } | null = null;
  const streamCount = await eventStreamCount(nc);
  await followEvents(
    jetstream(nc),
    subjects.turnEvents(sessionId, turnId, streamCount),
    (event) => {
      if (event.seq <= (options.afterSeq ?? -1)) return false;
      options.onEvent?.(event);
      if (event.kind === "HUMAN_INPUT_REQUESTED") prompt = event.payload;
      if (event.kind === "TURN_SUSPENDED") {
        const asked = prompt as {
          node: string;
          prompt: string;
          required_role?: string;
          approval?: ToolApproval;
        } | null;
        result = {
          status: "suspended",
          sessionId,
          turnId,
          node: event.payload.node,
          prompt: asked?.prompt ?? "",
          ...(asked?.required_role ? { requiredRole: asked.required_role } : {}),
          ...(asked?.approval ? { approval: asked.approval } : {}),
          ...(event.payload.expires_at !== undefined ? { expiresAt: event.payload.expires_at } : {}),
        };
        return true;
      }
      if (event.kind === "TURN_COMPLETED") {
        result = {
          status: "completed",
          sessionId,
          turnId,
          outcome: event.payload.outcome,
          output: event.payload.output ?? {},
          response: event.payload.response,
        };
        return true;
      }
      return false;
    },
    { signal: deadline },
  );
  if (!result) throw new TurnTimeoutError(sessionId, turnId, timeoutMs);
  return result;
}
