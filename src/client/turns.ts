import { jetstream } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import type { z } from "zod";
import { requestJson } from "../bus/request.ts";
import { subjects } from "../bus/subjects.ts";
import type { EngineEvent } from "../contracts/events.ts";
import { TurnAck, type TurnSubmission } from "../contracts/turn.ts";
import { ConclaveError } from "../errors.ts";
import { followEvents } from "../eventlog/reader.ts";

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

/** Raised for a turn that ended with outcome Failed (its TURN_COMPLETED names the error). */
export class TurnFailedError extends ConclaveError<"turn_failed"> {
  readonly sessionId: string;
  readonly turnId: number;
  /** The code the runner gave the failure. */
  readonly reason: string;
  constructor(sessionId: string, turnId: number, error: { code: string; message: string }) {
    super("turn_failed", `turn ${sessionId}/${turnId} failed: ${error.code}: ${error.message}`);
    this.sessionId = sessionId;
    this.turnId = turnId;
    this.reason = error.code;
  }
}

/**
 * Submits a user turn and returns its ack. A RemoteCallError with code
 * `no_responders` means no runner is up; `invalid_request`/`bad_json` carry
 * the runner's explanation.
 */
export function submitTurn(
  nc: NatsConnection,
  sessionId: string,
  submission: z.input<typeof TurnSubmission>,
  timeoutMs = 5_000,
): Promise<TurnAck> {
  return requestJson(nc, subjects.turnSubmit(sessionId), submission, TurnAck, { timeoutMs });
}

/**
 * Streams a turn's events (stored ones first, then live ones) until
 * TURN_COMPLETED, and returns that final event.
 */
export async function watchTurn(
  nc: NatsConnection,
  ack: TurnAck,
  onEvent: (event: EngineEvent) => void,
  timeoutMs = 60_000,
): Promise<Extract<EngineEvent, { kind: "TURN_COMPLETED" }>> {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), timeoutMs);
  let completed: Extract<EngineEvent, { kind: "TURN_COMPLETED" }> | null = null;
  try {
    await followEvents(
      jetstream(nc),
      subjects.turnEvents(ack.session_id, ack.turn_id),
      (event) => {
        onEvent(event);
        if (event.kind === "TURN_COMPLETED") {
          completed = event;
          return true;
        }
        return false;
      },
      { signal: abort.signal },
    );
  } finally {
    clearTimeout(timer);
  }
  if (!completed) throw new TurnTimeoutError(ack.session_id, ack.turn_id, timeoutMs);
  return completed;
}
