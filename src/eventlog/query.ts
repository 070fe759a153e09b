/**
 * Reading a range of a session's event log: by kind, by the time each event
 * was stored, by position (the stream sequence), one turn or all. The range's
 * start is the stream's own (a consumer starting at a sequence or at a time),
 * so a query for the last ten minutes of a long session does not read what
 * came before; the end stops the read at the first event past it.
 */
import { DeliverPolicy, jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import { isStreamNotFound } from "../bus/errors.ts";
import { eventStreamOfSubject, subjects } from "../bus/subjects.ts";
import { decodeStoredEvents } from "../contracts/eventBatch.ts";
import type { EngineEvent, EventKind } from "../contracts/events.ts";
import { orderedConsumer, releaseConsumer } from "./consumers.ts";
import { eventStreamCount } from "./eventStreams.ts";
import { PULL_EXPIRES_MS } from "./streams.ts";

/** Which events of a session to read. Every bound is inclusive; absent bounds do not limit. */
export interface EventRange {
  /** Only events of these kinds. */
  kinds?: readonly EventKind[];
  /** Only events stored at or after this time (a Date, or epoch ms). */
  since?: Date | number;
  /** Only events stored at or before this time (a Date, or epoch ms). */
  until?: Date | number;
  /** The first position (stream sequence) to read, a whole number from 1. */
  fromSeq?: number;
  /** The last position to read. */
  toSeq?: number;
  /** Only this turn's events. */
  turnId?: number;
}

/** What `queryEvents` reads: a range, and at most `limit` events of it (the first ones). */
export interface EventQuery extends EventRange {
  /** The most events returned, from the start of the range. Default 1 000. */
  limit?: number;
}

/** The default and the largest `limit` of a query. */
export const DEFAULT_QUERY_LIMIT = 1_000;
export const MAX_QUERY_LIMIT = 100_000;

/** An event read from the log, with where and when it was stored. */
export interface LoggedEvent {
  /**
   * Its position in the event log (the JetStream stream sequence of the message that holds it): not
   * contiguous, and shared by the events of one stored batch (docs/protocol.md), so it never decreases.
   */
  position: number;
  /** When the stream stored it (ISO 8601). */
  time: string;
  event: EngineEvent;
}

const epochMs = (time: Date | number): number => (typeof time === "number" ? time : time.getTime());

/** The filter subject of a session's turn events (ledger entries, two tokens deeper, are not matched). */
export const rangeFilter = (sessionId: string, streamCount: number, turnId?: number): string =>
  turnId === undefined
    ? subjects.sessionEvents(sessionId, streamCount)
    : subjects.turnEvents(sessionId, turnId, streamCount);

/**
 * Every stored event of the session in `range`, in log order, until `visit`
 * returns false (or the signal aborts). Stored messages that are no valid
 * event are skipped. Nothing stored (no event stream yet) reads nothing.
 */
export async function scanEvents(
  nc: NatsConnection,
  sessionId: string,
  range: EventRange,
  visit: (logged: LoggedEvent) => boolean,
  signal?: AbortSignal,
): Promise<void> {
  const jsm = await jetstreamManager(nc);
  const filter = rangeFilter(sessionId, await eventStreamCount(jsm), range.turnId);
  const stream = eventStreamOfSubject(filter);
  let last: number;
  try {
    last = (await jsm.streams.info(stream)).state.last_seq;
  } catch (error) {
    if (isStreamNotFound(error)) return;
    throw error;
  }
  const until = range.until === undefined ? Number.POSITIVE_INFINITY : epochMs(range.until);
  const toSeq = Math.min(range.toSeq ?? Number.POSITIVE_INFINITY, last);
  if (range.fromSeq !== undefined && range.fromSeq > toSeq) return;
  // Start where the range starts: at a position, else at a time, else at the beginning. (Given both, the
  // position starts the read and the time is checked on each event.)
  const start =
    range.fromSeq !== undefined
      ? { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: range.fromSeq }
      : range.since !== undefined
        ? { deliver_policy: DeliverPolicy.StartTime, opt_start_time: new Date(epochMs(range.since)).toISOString() }
        : { deliver_policy: DeliverPolicy.All };
  const consumer = await orderedConsumer(jetstream(nc), stream, { filter_subjects: filter, ...start });
  // Nothing at or after the start: the consumer would only wait for new events.
  if ((await consumer.info(true)).num_pending === 0) {
    await releaseConsumer(consumer);
    return;
  }
  const since = range.since === undefined ? Number.NEGATIVE_INFINITY : epochMs(range.since);
  const kinds = range.kinds && range.kinds.length > 0 ? new Set<string>(range.kinds) : null;
  const messages = await consumer.consume({ expires: PULL_EXPIRES_MS });
  const stop = () => void messages.stop();
  signal?.addEventListener("abort", stop, { once: true });
  if (signal?.aborted) stop();
  try {
    for await (const msg of messages) {
      const stored = msg.time.getTime();
      if (msg.seq > toSeq || stored > until) break;
      if (stored >= since) {
        const events = storedEvents(msg.data, kinds, `event ${msg.subject} (stream seq ${msg.seq})`);
        const time = msg.time.toISOString();
        if (!events.every((event) => visit({ position: msg.seq, time, event }))) break;
      }
      if (msg.info.pending === 0 || msg.seq >= toSeq) break;
    }
  } finally {
    signal?.removeEventListener("abort", stop);
    stop();
    await releaseConsumer(consumer);
  }
}

/** A stored message's events of one of `kinds` (any kind when null); none when it holds no valid event. */
function storedEvents(data: Uint8Array, kinds: ReadonlySet<string> | null, where: string): EngineEvent[] {
  return decodeStoredEvents(data, where, kinds ? (raw) => kinds.has(String(raw.kind)) : undefined).events;
}

/** The first `limit` events of the session in the query's range, in log order, with their positions and times. */
export async function queryEvents(
  nc: NatsConnection,
  sessionId: string,
  query: EventQuery = {},
  signal?: AbortSignal,
): Promise<LoggedEvent[]> {
  const limit = query.limit ?? DEFAULT_QUERY_LIMIT;
  const found: LoggedEvent[] = [];
  if (limit <= 0) return found;
  await scanEvents(
    nc,
    sessionId,
    query,
    (logged) => {
      found.push(logged);
      return found.length < limit;
    },
    signal,
  );
  return found;
}
