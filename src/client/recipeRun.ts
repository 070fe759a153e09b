import type { NatsConnection } from "@nats-io/nats-core";
import { requestJson } from "../bus/request.ts";
import { subjects } from "../bus/subjects.ts";
import type { EngineEvent } from "../contracts/events.ts";
import { checkSessionId, checkTurnId } from "../contracts/ids.ts";
import { type JsonObject, ResumeReply, type ResumeRequest } from "../contracts/recipeRun.ts";
import type { TurnAck } from "../contracts/turn.ts";
import { followRun, type RecipeRunResult } from "../eventlog/followRun.ts";
import { submitTurn } from "./turns.ts";

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
