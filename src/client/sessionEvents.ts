/**
 * Reading a session's events from the log (`client.events`, and the client's
 * own reads for `trace`, `verify` and `cost`): the stored ones from a position,
 * then, with `follow`, the live ones.
 */
import { DeliverPolicy, jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import { isStreamNotFound } from "../bus/errors.ts";
import { eventStreamOfSubject } from "../bus/subjects.ts";
import { decodeStoredEvents } from "../contracts/eventBatch.ts";
import type { EngineEvent } from "../contracts/events.ts";
import { checkSessionId, checkTurnId } from "../contracts/ids.ts";
import { InvalidRequestError } from "../errors.ts";
import { orderedConsumer, releaseConsumer } from "../eventlog/consumers.ts";
import { eventStreamCount } from "../eventlog/eventStreams.ts";
import { rangeFilter } from "../eventlog/query.ts";
import { PULL_EXPIRES_MS } from "../eventlog/streams.ts";

/**
 * An event of a session's log with its position. Resume after a position with
 * `events(session, { fromSeq: position + 1 })` once every event of it is read: the events of one stored
 * batch share their position and come one after another, so a read that stopped among them resumes
 * with `fromSeq: position` and leaves out the events it has (by `turn_id` and `seq`).
 */
export interface SessionEvent {
  /**
   * The sequence number in the event log (the JetStream stream sequence) of the message holding the
   * event: never decreasing, not contiguous, shared by the events of one batch (docs/protocol.md).
   */
  position: number;
  event: EngineEvent;
}

/** What `events` reads. */
export interface EventsOptions {
  /** The first position to read (see SessionEvent.position), a whole number from 1. Default: the session's first event. */
  fromSeq?: number;
  /** Only this turn's events. */
  turnId?: number;
  /** Go on with live events once the stored ones are read, until `signal` aborts. Default false. */
  follow?: boolean;
  signal?: AbortSignal;
}

/** The session's events, oldest first, each with its position (see EventsOptions). */
export async function* readSessionEvents(
  nc: NatsConnection,
  sessionId: string,
  options: EventsOptions = {},
): AsyncIterable<SessionEvent> {
  checkSessionId(sessionId);
  if (options.turnId !== undefined) checkTurnId(options.turnId);
  if (options.fromSeq !== undefined && !(Number.isInteger(options.fromSeq) && options.fromSeq >= 1))
    throw new InvalidRequestError(`bad fromSeq ${String(options.fromSeq)}: a position, a whole number from 1`);
  const jsm = await jetstreamManager(nc);
  const count = await eventStreamCount(jsm);
  const filter = rangeFilter(sessionId, count, options.turnId);
  const stream = eventStreamOfSubject(filter);
  let last: number;
  try {
    last = (await jsm.streams.info(stream)).state.last_seq;
  } catch (error) {
    if (isStreamNotFound(error) && !options.follow) return;
    throw error;
  }
  const consumer = await orderedConsumer(jetstream(nc), stream, {
    filter_subjects: filter,
    ...(options.fromSeq !== undefined
      ? { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: options.fromSeq }
      : { deliver_policy: DeliverPolicy.All }),
  });
  // Without follow, nothing to wait for when no stored event of the filter lies at or after the start
  // (the consumer's pending count, as the server created it: resuming past the last event ends at once).
  if (!options.follow && (await consumer.info(true)).num_pending === 0) {
    await releaseConsumer(consumer);
    return;
  }
  const messages = await consumer.consume({ expires: PULL_EXPIRES_MS });
  const stop = () => void messages.stop();
  options.signal?.addEventListener("abort", stop, { once: true });
  if (options.signal?.aborted) stop();
  // Per turn, the highest seq delivered: an event stored twice under its id (a publish retried across a
  // JetStream leader change can be) is delivered once. A turn's events are stored in seq order.
  const delivered = new Map<number, number>();
  try {
    for await (const msg of messages) {
      for (const event of decodeStoredEvents(msg.data, `event ${msg.subject} (stream seq ${msg.seq})`).events)
        if (event.seq > (delivered.get(event.turn_id) ?? -1)) {
          delivered.set(event.turn_id, event.seq);
          yield { position: msg.seq, event };
        }
      if (!options.follow && (msg.info.pending === 0 || msg.seq >= last)) break;
    }
  } finally {
    options.signal?.removeEventListener("abort", stop);
    stop();
    await releaseConsumer(consumer);
  }
}
