import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/nats-core";
import { decodeJson, encodeJson } from "../../bus/codec.ts";
import { asHandlerError, HandlerError, respondWithError } from "../../bus/errors.ts";
import { isInboxReply } from "../../bus/replies.ts";
import type { ServiceMsg } from "../../bus/service.ts";
import { buckets, subjects } from "../../bus/subjects.ts";
import { DEFAULT_ERASE_WAIT_MS, EraseRecord, EraseRequest } from "../../contracts/erase.ts";
import { TurnStatusRecord } from "../../contracts/wal.ts";
import { singleLine } from "../../errors.ts";
import { ensureAuditStream } from "../../eventlog/streams.ts";
import type { Logger } from "../log.ts";
import type { TurnStatusStore } from "../turnStatusStore.ts";
import { cancelTurn } from "./cancel.ts";
import { type EraseStoreDeps, eraseStores } from "./eraseStores.ts";
import { addressOf } from "./tenancy.ts";

/** What serving erase requests needs. */
export interface EraseDeps extends EraseStoreDeps {
  nc: NatsConnection;
  js: JetStreamClient;
  jsm: JetStreamManager;
  statuses: TurnStatusStore;
  log: Logger;
  /** This runner's name, recorded in the audit record. */
  runner: string;
}

/** Largest accepted erase request, in bytes. */
export const MAX_ERASE_BYTES = 4_096;

/** The reason recorded in the `Cancelled` outcome of a turn an erase stopped. */
export const ERASE_CANCEL_REASON = "the session is being erased";

const isOpen = (status: string) => status === "pending" || status === "inflight";

/**
 * An erase request (`conclave.session.erase.<session>`, any runner answers;
 * a tenant's through its account's import, for its own sessions only).
 * The session's turns still pending or running are cancelled first, as
 * `conclave cancel` does, and waited for (at most `wait_ms`); if one has not
 * ended by then, the answer is a `timeout` error and nothing is erased.
 * Then every store is purged of the session (eraseStores), a content-free
 * audit record goes to CONCLAVE_AUDIT, and the reply is that record. A store
 * that failed makes the reply an `internal` error naming it (the record
 * says so too): asking again is safe.
 */
export async function serveErase(deps: EraseDeps, msg: ServiceMsg): Promise<void> {
  try {
    const { sessionId, view, tenant } = addressOf(msg.subject);
    const request = decodeJson(msg.data, EraseRequest, `erase request for session ${view}`, MAX_ERASE_BYTES);
    const record = await eraseSession(deps, sessionId, { ...request, ...(tenant ? { tenant } : {}) });
    if (record.failed.length > 0) {
      throw new HandlerError(
        "internal",
        `session ${view}: erasing ${record.failed.join(", ")} failed (the rest is erased); ask again`,
      );
    }
    const reply: EraseRecord = { ...record.audit, session_id: view };
    if (isInboxReply(msg.reply, "runner")) msg.respond(encodeJson(reply));
  } catch (error) {
    const failure = asHandlerError(error);
    deps.log.warn(`erase on ${msg.subject}: ${singleLine(failure.message)}`);
    if (isInboxReply(msg.reply, "runner")) respondWithError(msg, failure);
  }
}

/**
 * Erases the session: cancels and waits for its open turns, purges every
 * store, writes the audit record. Throws a HandlerError `timeout` (nothing
 * erased) when a turn does not end in time.
 */
export async function eraseSession(
  deps: EraseDeps,
  sessionId: string,
  request: EraseRequest & { tenant?: string },
): Promise<{ audit: EraseRecord; failed: string[] }> {
  const startedAt = Date.now();
  const open = (await deps.statuses.list(sessionId)).filter((record) => isOpen(record.status));
  for (const turn of open) await cancelTurn(deps, sessionId, turn.turn_id, ERASE_CANCEL_REASON);
  const waitMs = request.wait_ms ?? DEFAULT_ERASE_WAIT_MS;
  const left = await untilEnded(
    deps.nc,
    sessionId,
    open.map((turn) => turn.turn_id),
    waitMs,
  );
  if (left.length > 0) {
    throw new HandlerError(
      "timeout",
      `session ${sessionId}: turn(s) ${left.join(", ")} cancelled but not ended within ${waitMs} ms; nothing erased, ask again`,
    );
  }
  const stores = await eraseStores(deps, sessionId);
  const audit: EraseRecord = {
    session_id: sessionId,
    ...(request.tenant ? { tenant: request.tenant } : {}),
    ...(request.requested_by ? { requested_by: request.requested_by } : {}),
    ...(request.reason ? { reason: request.reason } : {}),
    runner: deps.runner,
    started_at: startedAt,
    finished_at: Date.now(),
    cancelled_turns: open.map((turn) => turn.turn_id),
    erased: stores.erased,
    skipped: stores.skipped,
    ...(stores.failed.length > 0 ? { failed: stores.failed } : {}),
  };
  try {
    // Runners holding the session in memory (its actor: mood, stance) forget it, so nothing of it outlives the erase.
    deps.nc.publish(subjects.sessionErased, encodeJson({ session_id: sessionId }));
  } catch {
    // The connection is closing: the owner forgets the session when its idle time is up, or as it stops.
  }
  await ensureAuditStream(deps.jsm);
  await deps.js.publish(subjects.auditErase(sessionId), encodeJson(EraseRecord.parse(audit)));
  deps.log.info(
    `session ${sessionId} erased (${Object.entries(stores.erased)
      .filter(([, count]) => count > 0)
      .map(([store, count]) => `${store} ${count}`)
      .join(", ")})`,
  );
  return { audit, failed: stores.failed };
}

/**
 * Waits until each of the session's turns has a status other than pending
 * or inflight (or none), following the turn statuses' bucket; the turns
 * still open after `waitMs`.
 */
async function untilEnded(nc: NatsConnection, sessionId: string, turnIds: number[], waitMs: number): Promise<number[]> {
  const open = new Set(turnIds);
  if (open.size === 0 || waitMs === 0) return [...open];
  const kv = await new Kvm(nc).open(buckets.turns);
  const watch = await kv.watch({ key: `${sessionId}.*` });
  const timer = setTimeout(() => watch.stop(), waitMs);
  try {
    for await (const entry of watch) {
      const turnId = Number(entry.key.slice(sessionId.length + 1));
      if (!open.has(turnId)) continue;
      const parsed = entry.operation === "PUT" ? safeStatus(entry.value) : null;
      if (!parsed || !isOpen(parsed.status)) open.delete(turnId);
      if (open.size === 0) break;
    }
  } finally {
    clearTimeout(timer);
    watch.stop();
  }
  return [...open].sort((a, b) => a - b);
}

function safeStatus(value: Uint8Array): TurnStatusRecord | null {
  try {
    return decodeJson(value, TurnStatusRecord, "turn status");
  } catch {
    return null; // unreadable: no turn known to run
  }
}
