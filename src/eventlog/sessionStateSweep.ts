/**
 * The maximum age of session state (`retention.sessionStateMaxAgeMs`). The
 * bucket `conclave_sessions` holds content (snapshots, replay checkpoints,
 * idempotency keys, uncommitted memory, the fork index) beside the turn
 * counters, which must outlive it (turn ids are never given twice), and
 * nats-server 2.9 has no per-key TTL: so instead of a `max_age`, each runner
 * sweeps the content keys whose last change is older than the age, with the
 * secure delete an erase uses (their bytes are overwritten). See
 * docs/operations.md, "Data lifecycle".
 */
import type { JetStreamManager } from "@nats-io/jetstream";
import { isStreamNotFound } from "../bus/errors.ts";
import { buckets } from "../bus/subjects.ts";
import { messageOf } from "../errors.ts";
import { nextMessage } from "./eraseSecure.ts";

/** The keys of `conclave_sessions` that hold a session's content (`counter.<s>` is not one: it is kept). */
export const SESSION_STATE_KEYS = ["snapshot", "checkpoint", "idem", "uncommitted", "forks"] as const;

/** Most keys one sweep deletes: the next sweep goes on from there. */
export const SWEEP_BATCH = 1_000;

/** How often a runner sweeps: a quarter of the age, at most every 10 minutes, at least every second. */
export const sweepEveryMs = (maxAgeMs: number): number => Math.min(600_000, Math.max(1_000, Math.floor(maxAgeMs / 4)));

/**
 * Deletes (securely) the session state last changed before `now - maxAgeMs`,
 * at most SWEEP_BATCH keys: how many. A bucket with one revision per key
 * holds each key's latest value in the order they were written, so each kind
 * of key is read from its oldest and the sweep stops at the first one young
 * enough. A key deleted by another runner meanwhile is not an error.
 */
export async function sweepSessionState(jsm: JetStreamManager, maxAgeMs: number, now = Date.now()): Promise<number> {
  const stream = `KV_${buckets.sessions}`;
  const cutoff = now - maxAgeMs;
  let deleted = 0;
  try {
    for (const kind of SESSION_STATE_KEYS) {
      const filter = `$KV.${buckets.sessions}.${kind}.>`;
      for (let seq = 1; deleted < SWEEP_BATCH; ) {
        const msg = await nextMessage(jsm, stream, filter, seq);
        // nats-server 2.9 may answer a message before `seq` once none is left after it: the end.
        if (!msg || msg.seq < seq || msg.time.getTime() >= cutoff) break;
        await jsm.streams.deleteMessage(stream, msg.seq, true).catch((error: unknown) => {
          if (!/no message found/i.test(messageOf(error))) throw error;
        });
        deleted++;
        seq = msg.seq + 1;
      }
    }
  } catch (error) {
    if (!isStreamNotFound(error)) throw error;
  }
  return deleted;
}
