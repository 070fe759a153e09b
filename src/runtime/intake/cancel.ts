import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import { deadLetter } from "../../bus/deadLetters.ts";
import { asHandlerError, HandlerError, isStreamNotFound, respondWithError } from "../../bus/errors.ts";
import { isInboxReply } from "../../bus/replies.ts";
import type { ServiceMsg } from "../../bus/service.ts";
import { eventStreamOfSubject, subjects } from "../../bus/subjects.ts";
import { addressOf } from "../../bus/tenancy.ts";
import { decodeMessage, publishJson, respondJson } from "../../bus/wire.ts";
import { parseStoredEvents } from "../../contracts/eventBatch.ts";
import type { EngineEvent } from "../../contracts/events.ts";
import { type CancelReply, CancelRequest, type TurnCancelled } from "../../contracts/turn.ts";
import { turnLabel } from "../../contracts/turnKey.ts";
import type { TurnStatusRecord } from "../../contracts/wal.ts";
import { singleLine } from "../../errors.ts";
import { eventStreamCount } from "../../eventlog/eventStreams.ts";
import type { TurnStatusStore } from "../../eventlog/turnStatusStore.ts";
import type { Logger } from "../../telemetry/log.ts";
import { cancelSuspended, type SuspendedCancelDeps } from "./cancelSuspended.ts";

/** What answering a cancel request needs. */
export interface CancelDeps {
  nc: NatsConnection;
  js: JetStreamClient;
  jsm: JetStreamManager;
  /** The turn WAL's partition count (a resumed run's entry goes to its session's partition). */
  partitions: number;
  statuses: TurnStatusStore;
  log: Logger;
}

/** Largest accepted cancel request, in bytes (the reason is at most 500 characters). */
export const MAX_CANCEL_BYTES = 4_096;

/** Refusals that are the requester's bad input, kept in the dead-letter stream (source `cancel`). */
const BAD_INPUT = new Set(["bad_json", "invalid_request", "payload_too_large"]);

/** How long a cancel waits for a run whose TURN_SUSPENDED is stored to be recorded suspended (its log says so first). */
const SUSPENSION_SETTLE_MS = 3_000;

/** The reason recorded when a client gives none. */
export const DEFAULT_CANCEL_REASON = "cancelled by the client";

/**
 * A cancel request (`conclave.turn.cancel.<session>`, any runner answers):
 * a turn still pending or running is marked cancelled in its status (so a
 * runner that takes it later, or takes it over, ends it at once) and every
 * runner and worker is told (`conclave.turn.cancelled`): the one running it
 * stops it, workers stop its calls. It then completes with outcome
 * `Cancelled`. A suspended turn (waiting at a human node or for an approval)
 * is ended `Cancelled` here and now (`cancelSuspended.ts`); one answered
 * meanwhile runs again, and is cancelled as a running one. Either way the
 * reply is `cancelling`. A turn that already ended is reported as finished
 * (so a second cancel changes nothing). Bad input gets an error reply and is
 * kept as a dead letter, as submissions are.
 */
export async function serveCancel(
  deps: CancelDeps & Pick<SuspendedCancelDeps, "sessions" | "timers">,
  msg: ServiceMsg,
): Promise<void> {
  try {
    const { sessionId, view, tenant } = addressOf(msg.subject);
    if (tenant) throw new HandlerError("invalid_request", "tenants cannot cancel turns yet");
    const request = decodeMessage(msg, CancelRequest, `cancel request for session ${view}`, MAX_CANCEL_BYTES);
    const reason = request.reason ?? DEFAULT_CANCEL_REASON;
    // Its end may be stored while its status still says inflight (the status is written after): that is finished.
    const last = await lastEventOf(deps.jsm, sessionId, request.turn_id);
    if (last?.kind === "TURN_COMPLETED") {
      const outcome = last.payload.outcome.status;
      const reply: CancelReply = { session_id: view, turn_id: request.turn_id, status: "finished", outcome };
      if (isInboxReply(msg.reply, "runner")) respondJson(msg, reply);
      return;
    }
    if (await endedWhileSuspended(deps, sessionId, request.turn_id, reason, last?.kind === "TURN_SUSPENDED")) {
      const reply: CancelReply = { session_id: view, turn_id: request.turn_id, status: "cancelling" };
      if (isInboxReply(msg.reply, "runner")) respondJson(msg, reply);
      return;
    }
    const marked = await cancelTurn(deps, sessionId, request.turn_id, reason);
    if (!marked) throw new HandlerError("not_found", `session ${view} has no turn ${request.turn_id}`);
    const open = marked.status === "pending" || marked.status === "inflight";
    const reply: CancelReply = {
      session_id: view,
      turn_id: request.turn_id,
      status: open ? "cancelling" : "finished",
      ...(!open && marked.outcome ? { outcome: marked.outcome } : {}),
    };
    if (isInboxReply(msg.reply, "runner")) respondJson(msg, reply);
  } catch (error) {
    const failure = asHandlerError(error);
    deps.log.warn(`cancel on ${msg.subject}: ${singleLine(failure.message)}`);
    if (isInboxReply(msg.reply, "runner")) respondWithError(msg, failure);
    if (!BAD_INPUT.has(failure.code)) return;
    const lost = await deadLetter(deps.js, "cancel", {
      subject: msg.subject,
      data: msg.data,
      code: failure.code,
      reason: failure.message,
    });
    if (lost) deps.log.error(`dead letter not stored: ${lost.message}`);
  }
}

/**
 * Marks a pending or running turn cancelled in its status and tells every
 * runner and worker (`conclave.turn.cancelled`): the path of every cancel
 * (`conclave cancel`, a session's erase). Returns the status as it now is;
 * null when the session has no such turn.
 */
export async function cancelTurn(
  deps: Pick<CancelDeps, "nc" | "statuses" | "log">,
  sessionId: string,
  turnId: number,
  reason: string,
): Promise<TurnStatusRecord | null> {
  const marked = await deps.statuses.requestCancel(sessionId, turnId, reason);
  if (marked && (marked.status === "pending" || marked.status === "inflight")) {
    publishJson(deps.nc, subjects.turnCancelled, {
      session_id: sessionId,
      turn_id: turnId,
      reason,
    } satisfies TurnCancelled);
    deps.log.info(`${turnLabel(sessionId, turnId)}: cancel requested (${singleLine(reason, 200)})`);
  }
  return marked;
}

/**
 * Ends the turn `Cancelled` if it is suspended (`cancelSuspended`): true when this cancel ended it. A run
 * whose log ends with TURN_SUSPENDED (`suspending`) while its status still says inflight is waited for a
 * moment: its runner records it suspended just after, and a cancel sent at once must not be lost meanwhile.
 */
async function endedWhileSuspended(
  deps: CancelDeps & Pick<SuspendedCancelDeps, "sessions" | "timers">,
  sessionId: string,
  turnId: number,
  reason: string,
  suspending: boolean,
): Promise<boolean> {
  const status = suspending
    ? await deps.statuses.settled(sessionId, turnId, SUSPENSION_SETTLE_MS)
    : await deps.statuses.get(sessionId, turnId);
  if (status?.status !== "suspended") return false;
  // Null: answered (or timed out) meanwhile, so it runs again: the caller cancels it as a running turn.
  return (await cancelSuspended(deps, status, reason)) !== null;
}

/** The turn's last stored event, else null. */
async function lastEventOf(jsm: JetStreamManager, sessionId: string, turnId: number): Promise<EngineEvent | null> {
  try {
    const subject = subjects.turnEvents(sessionId, turnId, await eventStreamCount(jsm));
    const last = await jsm.streams.getMessage(eventStreamOfSubject(subject), { last_by_subj: subject });
    if (!last) return null;
    return parseStoredEvents(last.json(), `event ${subject} (stream seq ${last.seq})`).events.at(-1) ?? null;
  } catch (error) {
    if (isStreamNotFound(error)) return null;
    throw error;
  }
}
