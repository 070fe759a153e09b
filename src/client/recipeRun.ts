import { jetstream } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import { requestJson } from "../bus/request.ts";
import { subjects } from "../bus/subjects.ts";
import type { EngineEvent } from "../contracts/events.ts";
import { type JsonObject, ResumeReply, type ResumeRequest, type ToolApproval } from "../contracts/recipeRun.ts";
import type { TurnAck, TurnOutcome } from "../contracts/turn.ts";
import { deadlineSignal } from "../deadline.ts";
import { followEvents } from "../eventlog/reader.ts";
import { checkSessionId, checkTurnId, submitTurn, TurnTimeoutError } from "./turns.ts";

/** How to run a recipe. */
export interface RunOptions {
  /** The run's arguments (checked against the recipe's `interface.inputs`). Default `{}`. */
  inputs?: JsonObject;
  /** Resubmitting with the same key returns the first run and runs nothing. */
  idempotencyKey?: string;
  /** Write tools only simulate (their `dryRun`): the run shows its plan and changes nothing. Default false. */
  dryRun?: boolean;
  userId?: string;
  /** Each event of the run as it is stored. */
  onEvent?: (event: EngineEvent) => void;
  /** Patience until the run completes or suspends, in ms. Default 120 000. */
  timeoutMs?: number;
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

/** How to answer a suspended run. */
export interface ResumeOptions {
  /** The answer (any JSON value), written under the human node's output key. */
  input: unknown;
  userId: string;
  /** The role answering; must be the node's `required_role` when it has one. */
  role?: string;
  /** Each event of the run after the suspension answered, as it is stored. */
  onEvent?: (event: EngineEvent) => void;
  /** Patience until the run completes or suspends again, in ms. Default 120 000. */
  timeoutMs?: number;
  /** Patience for the runner's answer to the resume request, in ms. Default 5 000. */
  requestTimeoutMs?: number;
}

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
  await followEvents(
    jetstream(nc),
    subjects.turnEvents(sessionId, turnId),
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

/** Submits a recipe run and follows it until it completes or suspends (the client's `run`). */
export async function runRecipe(
  nc: NatsConnection,
  sessionId: string,
  document: JsonObject,
  options: RunOptions = {},
): Promise<RecipeRunResult & { ack: TurnAck }> {
  checkSessionId(sessionId);
  const ack = await submitTurn(nc, sessionId, {
    recipe: { document, inputs: options.inputs ?? {}, ...(options.dryRun ? { dry_run: true } : {}) },
    ...(options.idempotencyKey ? { idempotency_key: options.idempotencyKey } : {}),
    ...(options.userId ? { user_id: options.userId } : {}),
  });
  const result = await followRun(nc, ack.session_id, ack.turn_id, options);
  return { ...result, ack };
}

/** Answers a suspended run's human node, then follows it until it completes or suspends again (the client's `resume`). */
export async function resumeRun(
  nc: NatsConnection,
  sessionId: string,
  turnId: number,
  options: ResumeOptions,
): Promise<RecipeRunResult> {
  checkSessionId(sessionId);
  checkTurnId(turnId);
  const request: ResumeRequest = {
    turn_id: turnId,
    input: options.input,
    user_id: options.userId,
    ...(options.role ? { role: options.role } : {}),
  };
  const reply = await requestJson(nc, subjects.turnResume(sessionId), request, ResumeReply, {
    timeoutMs: options.requestTimeoutMs ?? 5_000,
  });
  // What the run logged up to the suspension this answered is not this answer's: follow from there.
  return followRun(nc, sessionId, turnId, { ...options, afterSeq: reply.after_seq });
}
