import type { NatsConnection } from "@nats-io/nats-core";
import { requestJson } from "../bus/request.ts";
import { subjects } from "../bus/subjects.ts";
import { DEFAULT_ERASE_WAIT_MS, EraseRecord, type EraseRequest } from "../contracts/erase.ts";
import { checkSessionId } from "../contracts/ids.ts";

/** What `erase` may say about itself, for the audit record. */
export type EraseOptions = EraseRequest;

/**
 * Erases everything stored of a session, through a runner (the client needs
 * no purge rights): turns in flight are cancelled and waited for, then every
 * store is purged, and a content-free audit record is kept. Resolves with
 * that record; rejects with `timeout` when a turn did not end in time
 * (nothing erased), `internal` when a store failed (ask again).
 */
export function eraseSession(
  nc: NatsConnection,
  sessionId: string,
  options: EraseOptions,
  requestTimeoutMs: number,
): Promise<EraseRecord> {
  checkSessionId(sessionId);
  // The runner waits for turns to end before it erases: the request outlives that wait.
  const timeoutMs = Math.max(requestTimeoutMs, (options.wait_ms ?? DEFAULT_ERASE_WAIT_MS) + 30_000);
  return requestJson(nc, subjects.sessionErase(sessionId), options, EraseRecord, { timeoutMs });
}
