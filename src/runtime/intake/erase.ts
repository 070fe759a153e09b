import { type JetStreamClient, type JetStreamManager, jetstream } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/nats-core";
import { decodeJson, encodeRecord } from "../../bus/codec.ts";
import { asHandlerError, HandlerError, respondWithError } from "../../bus/errors.ts";
import { isInboxReply } from "../../bus/replies.ts";
import type { ServiceMsg } from "../../bus/service.ts";
import { buckets, subjects } from "../../bus/subjects.ts";
import { addressOf } from "../../bus/tenancy.ts";
import { decodeMessage, respondJson } from "../../bus/wire.ts";
import { DEFAULT_ERASE_WAIT_MS, EraseRecord, EraseRequest } from "../../contracts/erase.ts";
import { TurnStatusRecord } from "../../contracts/wal.ts";
import { singleLine } from "../../errors.ts";
import { ensureAuditStream } from "../../eventlog/streams.ts";
import type { TurnStatusStore } from "../../eventlog/turnStatusStore.ts";
import { stopSessionSchedules } from "../../schedules/erase.ts";
import type { Logger } from "../../telemetry/log.ts";
import { announceErasure } from "../runner/sessionErasures.ts";
import { cancelTurn } from "./cancel.ts";
import { forksOf } from "./eraseForks.ts";
import { type EraseStoreDeps, eraseStores, type StoresErased } from "./eraseStores.ts";

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
    const request = decodeMessage(msg, EraseRequest, `erase request for session ${view}`, MAX_ERASE_BYTES);
    const record = await eraseSession(deps, sessionId, { ...request, ...(tenant ? { tenant } : {}) });
    if (record.failed.length > 0) {
      throw new HandlerError(
        "internal",
        `session ${view}: erasing ${record.failed.join(", ")} failed (the rest is erased); ask again`,
      );
    }
    const reply: EraseRecord = { ...record.audit, session_id: view };
    if (isInboxReply(msg.reply, "runner")) respondJson(msg, reply);
  } catch (error) {
    const failure = asHandlerError(error);
    deps.log.warn(`erase on ${msg.subject}: ${singleLine(failure.message)}`);
    if (isInboxReply(msg.reply, "runner")) respondWithError(msg, failure);
  }
}

/**
 * What every erase keeps, and why: written into each audit record (`kept`).
 * See docs/operations.md, "Erasing a session".
 */
export const KEPT_BY_DESIGN: Readonly<Record<string, string>> = {
  turn_counter:
    "counter.<session> (two integers, and whether the session chose a pipeline): turn ids are never given twice",
  ownership: "the owner record (a runner's name): its runner releases it when told of the erase",
  audit_record: "this record in CONCLAVE_AUDIT: ids, times and counts, no content",
  schedule_markers:
    "each erased schedule's 'erased' log event (its id and a time) and its fire claims (id, due time, runner)",
  superseded_revisions:
    "bytes of values a later write of the same KV key replaced, and of messages a stream's limits removed, " +
    "before the erase: nats-server 2.9 leaves them in the block file until the block is compacted or removed",
};

/**
 * Erases the session: stops its schedules, cancels and waits for its open
 * turns, erases every store (a turn that started meanwhile is cancelled and
 * the stores erased again), tells every process to drop its copy (waiting
 * for the memory workers' answers, bounded), erases its forks when asked,
 * writes the audit record. Throws a HandlerError `timeout` (only the
 * schedules stopped) when a turn does not end in time.
 */
export async function eraseSession(
  deps: EraseDeps,
  sessionId: string,
  request: EraseRequest & { tenant?: string },
  seen: Set<string> = new Set([sessionId]),
): Promise<{ audit: EraseRecord; failed: string[] }> {
  const startedAt = Date.now();
  await stopSessionSchedules(jetstream(deps.nc), deps.jsm, sessionId);
  const cancelled = await cancelOpenTurns(deps, sessionId, request.wait_ms ?? DEFAULT_ERASE_WAIT_MS);
  const withForks = request.with_forks === true;
  const forks = await forksOf(deps.jsm, sessionId);
  let stores = await eraseStores(deps, sessionId, { withForks });
  // A turn submitted while the stores were erased (a client, a schedule's fire already under way) goes too.
  const late = await cancelOpenTurns(deps, sessionId, request.wait_ms ?? DEFAULT_ERASE_WAIT_MS);
  if (late.length > 0) stores = mergeStores(stores, await eraseStores(deps, sessionId, { withForks }));
  const acknowledged = await announceErasure(deps.nc, sessionId);
  const failed = [...stores.failed];
  if (withForks) {
    for (const fork of forks.filter((id) => !seen.has(id))) {
      seen.add(fork);
      const reason = `fork of erased session ${sessionId}`;
      const forked = await eraseSession(deps, fork, { ...request, reason }, seen);
      failed.push(...forked.failed.map((store) => `${fork}:${store}`));
    }
  }
  const audit: EraseRecord = {
    session_id: sessionId,
    ...(request.tenant ? { tenant: request.tenant } : {}),
    ...(request.requested_by ? { requested_by: request.requested_by } : {}),
    ...(request.reason ? { reason: request.reason } : {}),
    runner: deps.runner,
    started_at: startedAt,
    finished_at: Date.now(),
    cancelled_turns: [...cancelled, ...late],
    erased: stores.erased,
    skipped: stores.skipped,
    ...(failed.length > 0 ? { failed } : {}),
    kept: {
      ...KEPT_BY_DESIGN,
      ...(forks.length > 0 && !withForks ? { forks: "the sessions in 'forks': erase them with --with-forks" } : {}),
    },
    acknowledged_by: acknowledged,
    ...(forks.length > 0 ? { forks, forks_erased: withForks } : {}),
  };
  await ensureAuditStream(deps.jsm);
  await deps.js.publish(subjects.auditErase(sessionId), encodeRecord(EraseRecord.parse(audit)));
  deps.log.info(`session ${sessionId} erased (${summary(stores)})`);
  return { audit, failed };
}

/**
 * Cancels the session's pending and running turns, as `conclave cancel`
 * does, and waits at most `waitMs` for them to end: their ids. Throws a
 * HandlerError `timeout` when one has not ended by then.
 */
async function cancelOpenTurns(deps: EraseDeps, sessionId: string, waitMs: number): Promise<number[]> {
  const open = (await deps.statuses.list(sessionId)).filter((record) => isOpen(record.status));
  for (const turn of open) await cancelTurn(deps, sessionId, turn.turn_id, ERASE_CANCEL_REASON);
  const turnIds = open.map((turn) => turn.turn_id);
  const left = await untilEnded(deps.nc, sessionId, turnIds, waitMs);
  if (left.length > 0) {
    throw new HandlerError(
      "timeout",
      `session ${sessionId}: turn(s) ${left.join(", ")} cancelled but not ended within ${waitMs} ms; ` +
        "its schedules are stopped, nothing else erased yet: ask again",
    );
  }
  return turnIds;
}

function mergeStores(first: StoresErased, second: StoresErased): StoresErased {
  const erased = { ...first.erased };
  for (const [store, count] of Object.entries(second.erased)) erased[store] = (erased[store] ?? 0) + count;
  return { erased, skipped: second.skipped, failed: second.failed };
}

const summary = (stores: StoresErased) =>
  Object.entries(stores.erased)
    .filter(([, count]) => count > 0)
    .map(([store, count]) => `${store} ${count}`)
    .join(", ");

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
