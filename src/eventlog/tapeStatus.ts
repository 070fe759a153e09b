/**
 * A session's tape: how much of the event log it holds, from when to when,
 * and the last replay checkpoint of its state.
 *
 * How each figure is read, as cheaply as JetStream allows exactly:
 * - turns: the stream's info filtered by the session's subjects
 *   (`subjects_filter`: a count per turn subject, no message read);
 * - events, bytes, first and last: JetStream keeps no byte count per subject,
 *   so a headers-only consumer reads the session's messages without their
 *   bodies, each carrying its body's size (`Nats-Msg-Size`) and, a batch, its
 *   event count (`Conclave-Events`): one pass over the session, no payload sent. `bytes` is the sum of the events' bodies (the
 *   stored JSON), not counting headers or the store's own overhead;
 * - the checkpoint: the session store (`conclave_sessions`), which only the
 *   runner role reads (as `conclave replay` does): a reader without it gets
 *   `checkpoint: null` and `checkpoint_unavailable` saying why.
 */
import { DeliverPolicy, JsHeaders, jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import { isStreamNotFound } from "../bus/errors.ts";
import { eventStreamOfSubject } from "../bus/subjects.ts";
import { EVENT_COUNT_HEADER, eventCountOf } from "../contracts/eventBatch.ts";
import { messageOf } from "../errors.ts";
import { orderedConsumer, releaseConsumer } from "./consumers.ts";
import { eventStreamCount } from "./eventStreams.ts";
import { rangeFilter } from "./query.ts";
import { PULL_EXPIRES_MS } from "./streams.ts";

/** Where one end of the tape is. */
export interface TapeEnd {
  /** The position (stream sequence) of the event. */
  position: number;
  /** When it was stored (ISO 8601). */
  time: string;
}

/** What `readTapeStatus` reports of a session's tape. */
export interface TapeStatus {
  session_id: string;
  /** Events stored for the session's turns (its ledger entries are not counted). */
  events: number;
  /** Turns with at least one stored event. */
  turns: number;
  /** Bytes of the stored events (their JSON bodies). */
  bytes: number;
  /** The session's first and last stored events; null when it has none. */
  first: TapeEnd | null;
  last: TapeEnd | null;
  /** The last replay checkpoint: the session's state through this turn is saved (replay starts after it). */
  checkpoint: { through_turn_id: number; turns_completed: number } | null;
  /** Why `checkpoint` could not be read, when it could not. */
  checkpoint_unavailable?: string;
}

/** Reads the session's last replay checkpoint (SessionStore.checkpoint), or null when it has none. */
export type CheckpointReader = (
  sessionId: string,
) => Promise<{ through_turn_id: number; snapshot: { turns_completed: number } } | null>;

/**
 * The session's tape status. Without `readCheckpoint` (a reader of the
 * session store) the checkpoint is reported unavailable.
 */
export async function readTapeStatus(
  nc: NatsConnection,
  sessionId: string,
  readCheckpoint?: CheckpointReader,
): Promise<TapeStatus> {
  const [tape, checkpoint] = await Promise.all([readTape(nc, sessionId), checkpointOf(sessionId, readCheckpoint)]);
  return { session_id: sessionId, ...tape, ...checkpoint };
}

async function checkpointOf(
  sessionId: string,
  readCheckpoint: CheckpointReader | undefined,
): Promise<Pick<TapeStatus, "checkpoint" | "checkpoint_unavailable">> {
  if (!readCheckpoint)
    return { checkpoint: null, checkpoint_unavailable: "the session store is read in the runner role only" };
  try {
    const found = await readCheckpoint(sessionId);
    return {
      checkpoint: found
        ? { through_turn_id: found.through_turn_id, turns_completed: found.snapshot.turns_completed }
        : null,
    };
  } catch (error) {
    if (isStreamNotFound(error)) return { checkpoint: null }; // no session store yet: no checkpoint
    return { checkpoint: null, checkpoint_unavailable: messageOf(error) };
  }
}

type Tape = Pick<TapeStatus, "events" | "turns" | "bytes" | "first" | "last">;

async function readTape(nc: NatsConnection, sessionId: string): Promise<Tape> {
  const empty: Tape = { events: 0, turns: 0, bytes: 0, first: null, last: null };
  const jsm = await jetstreamManager(nc);
  const filter = rangeFilter(sessionId, await eventStreamCount(jsm));
  const stream = eventStreamOfSubject(filter);
  let counts: Record<string, number>;
  try {
    counts = (await jsm.streams.info(stream, { subjects_filter: filter })).state.subjects ?? {};
  } catch (error) {
    if (isStreamNotFound(error)) return empty;
    throw error;
  }
  const perTurn = Object.values(counts);
  if (perTurn.every((count) => count === 0)) return empty;
  const consumer = await orderedConsumer(jetstream(nc), stream, {
    filter_subjects: filter,
    deliver_policy: DeliverPolicy.All,
    headers_only: true,
  });
  let bytes = 0;
  let events = 0;
  let first: TapeEnd | null = null;
  let last: TapeEnd | null = null;
  try {
    if ((await consumer.info(true)).num_pending > 0) {
      const messages = await consumer.consume({ expires: PULL_EXPIRES_MS });
      try {
        for await (const msg of messages) {
          bytes += Number(msg.headers?.get(JsHeaders.MessageSizeHdr) ?? 0);
          events += eventCountOf(msg.headers?.get(EVENT_COUNT_HEADER));
          last = { position: msg.seq, time: msg.time.toISOString() };
          first ??= last;
          if (msg.info.pending === 0) break;
        }
      } finally {
        void messages.stop();
      }
    }
  } finally {
    await releaseConsumer(consumer);
  }
  return { events, turns: perTurn.filter((count) => count > 0).length, bytes, first, last };
}
