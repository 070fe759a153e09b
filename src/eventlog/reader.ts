import type { Consumer, JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import { DeliverPolicy } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import { eventStreamOfSubject } from "../bus/subjects.ts";
import { decodeStoredEvents } from "../contracts/eventBatch.ts";
import type { EngineEvent } from "../contracts/events.ts";
import { FormatTooNewError } from "../contracts/format.ts";
import { turnKey } from "../contracts/turnKey.ts";
import { backoffMs, pause } from "../deadline.ts";
import { orderedConsumer, releaseConsumer } from "./consumers.ts";
import { eventStreamCount } from "./eventStreams.ts";
import { rangeFilter } from "./query.ts";
import { PULL_EXPIRES_MS } from "./streams.ts";

/** Reading back, how long without a message before the consumer is asked whether anything is left. */
const CAUGHT_UP_CHECK_MS = 500;

/**
 * Heartbeats missed in a row (one is due every half PULL_EXPIRES_MS) before a follow gives its consumer up
 * and makes another from where it got to: 10 s of silence from a server that owes one every 2.5 s.
 */
const REMAKE_AFTER_MISSED_HEARTBEATS = 4;

/** How many events are stored under a filter right now. */
async function storedCount(jsm: JetStreamManager, filter: string): Promise<number> {
  const info = await jsm.streams.info(eventStreamOfSubject(filter), { subjects_filter: filter });
  return Object.values(info.state.subjects ?? {}).reduce((sum, count) => sum + count, 0);
}

export interface FollowOptions {
  signal?: AbortSignal;
  /** Told about a stored message that is not a valid EngineEvent; it is skipped. */
  onInvalid?: (subject: string, error: unknown) => void;
  /** Told the stream sequence of every message read, valid or not (a writer resuming a turn fences on the last). */
  onStreamSeq?: (seq: number) => void;
  /** Stop once everything stored so far is delivered (read back, not follow). */
  untilCaughtUp?: boolean;
  /**
   * The connection `js` uses: when given, a follow that lives through a
   * reconnect makes its consumer again from where it was (a server restart
   * may leave the old one stalled rather than ended).
   */
  connection?: NatsConnection;
}

/**
 * Reads back what is stored for a session (every turn, or one): each turn's
 * events in `seq` order, turns in log order. Stops once it has caught up
 * with the stream.
 */
export async function readEvents(
  js: JetStreamClient,
  jsm: JetStreamManager,
  sessionId: string,
  turnId?: number,
  options: Omit<FollowOptions, "signal"> = {},
): Promise<EngineEvent[]> {
  const count = await eventStreamCount(jsm);
  const filter = rangeFilter(sessionId, count, turnId);
  if ((await storedCount(jsm, filter)) === 0) return [];
  const events: EngineEvent[] = [];
  await followEvents(
    js,
    filter,
    (event) => {
      events.push(event);
      return false;
    },
    { ...options, untilCaughtUp: true },
  );
  return events;
}

/** How long a follow keeps trying to pick up again after its consumer is lost (a NATS restart), without a signal. */
const RESUME_WITHIN_MS = 30_000;

/**
 * Delivers the stored events under `filter` from the first one, then live ones
 * as they are written, until `onEvent` returns true or the signal aborts.
 * Within a turn, events are delivered in `seq` order: one stored late (a
 * publish retried across an outage) is held back until the gap before it
 * fills. `caughtUp` is true when nothing more is stored yet.
 *
 * A consumer lost on the way (nats-server restarted, JetStream not answering
 * for a while) is made again from the stream sequence after the last message
 * read, so a follow goes on across an outage: until the signal aborts, or
 * for 30 s of failed attempts when there is no signal.
 */
export async function followEvents(
  js: JetStreamClient,
  filter: string,
  /** Return true to stop. */
  onEvent: (event: EngineEvent, position: { caughtUp: boolean }) => boolean,
  options: FollowOptions = {},
): Promise<void> {
  const nextSeq = new Map<string, number>();
  const held = new Map<string, Map<number, EngineEvent>>();
  let lastStreamSeq = 0;
  let lostSince: number | null = null;
  for (let attempt = 0; !options.signal?.aborted; attempt++) {
    let outcome: "done" | "lost";
    try {
      outcome = await followOnce(js, filter, lastStreamSeq, nextSeq, held, onEvent, options, (seq) => {
        lastStreamSeq = seq;
        lostSince = null;
        attempt = 0;
      });
    } catch (error) {
      if (options.signal?.aborted) return;
      if (isClosedConnection(error)) throw error; // nothing to pick up again on
      if (error instanceof FormatTooNewError) throw error; // picking up again would skip it: refused, said
      lostSince ??= Date.now();
      if (!options.signal && Date.now() - lostSince > RESUME_WITHIN_MS) throw error;
      outcome = "lost";
    }
    if (outcome === "done") return;
    lostSince ??= Date.now();
    if (!options.signal && Date.now() - lostSince > RESUME_WITHIN_MS) return;
    await pause(backoffMs(attempt, { baseMs: 100, maxMs: 1_000 }), options.signal);
  }
}

const isClosedConnection = (error: unknown): boolean =>
  error instanceof Error && error.name === "ClosedConnectionError";

/**
 * One consumer's worth of a follow, from the stream sequence after
 * `afterStreamSeq` (0: from the first event). "done" when the caller asked to
 * stop (or aborted); "lost" when the consumer ended by itself.
 */
async function followOnce(
  js: JetStreamClient,
  filter: string,
  afterStreamSeq: number,
  nextSeq: Map<string, number>,
  held: Map<string, Map<number, EngineEvent>>,
  onEvent: (event: EngineEvent, position: { caughtUp: boolean }) => boolean,
  options: FollowOptions,
  onRead: (streamSeq: number) => void,
): Promise<"done" | "lost"> {
  const consumer = await orderedConsumer(
    js,
    eventStreamOfSubject(filter),
    afterStreamSeq === 0
      ? { filter_subjects: filter, deliver_policy: DeliverPolicy.All }
      : { filter_subjects: filter, deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: afterStreamSeq + 1 },
  );
  let outcome: "done" | "lost" = "lost";
  try {
    outcome = await readConsumer(consumer, nextSeq, held, onEvent, options, onRead);
    return outcome;
  } finally {
    const released = releaseConsumer(consumer);
    // Awaited when done (a CLI command closes its connection once the read returns); a follow that
    // goes on after losing its consumer does not wait on a server that may be away.
    if (outcome === "done") await released;
  }
}

/** Delivers what `consumer` reads, as followOnce describes. */
async function readConsumer(
  consumer: Consumer,
  nextSeq: Map<string, number>,
  held: Map<string, Map<number, EngineEvent>>,
  onEvent: (event: EngineEvent, position: { caughtUp: boolean }) => boolean,
  options: FollowOptions,
  onRead: (streamSeq: number) => void,
): Promise<"done" | "lost"> {
  const messages = await consumer.consume({ expires: PULL_EXPIRES_MS });
  let stopped = false;
  const stop = () => {
    stopped = true;
    void messages.stop();
  };
  options.signal?.addEventListener("abort", stop, { once: true });
  if (options.signal?.aborted) stop(); // aborted while the consumer was being created
  // Reading back, a message deleted after the count (an erase or a trim deletes one by one) is never
  // delivered, so the last one may never say "nothing pending": when no message comes for a while, the
  // consumer itself is asked whether anything is left to deliver.
  /** The consumer sequence of the last message read: the consumer has delivered nothing more when it says the same. */
  let lastDelivery = 0;
  let caughtUpIdle = false;
  /** The consumer sequence read at the last tick: a tick that finds it moved on lets the read go on unasked. */
  let seenAtTick = -1;
  const idle = options.untilCaughtUp
    ? setInterval(() => {
        if (lastDelivery !== seenAtTick) {
          seenAtTick = lastDelivery;
          return;
        }
        void consumer.info(false).then(
          (info) => {
            if (info.num_pending === 0 && info.delivered.consumer_seq <= lastDelivery) {
              caughtUpIdle = true;
              stop();
            }
          },
          () => {}, // asked again at the next tick
        );
      }, CAUGHT_UP_CHECK_MS)
    : undefined;
  // Silence from the server (no message, no heartbeat) for a while: the library's own recovery has not
  // brought the consumer back (seen after a partition healed: a follow waited out its whole patience
  // for a turn that had completed), so a fresh one is made from where this read got to.
  const notifications = messages.status();
  void (async () => {
    for await (const note of notifications)
      if (note.type === "heartbeats_missed" && note.count >= REMAKE_AFTER_MISSED_HEARTBEATS) {
        void messages.stop();
        return;
      }
  })();
  const statuses = options.connection?.status();
  if (statuses)
    void (async () => {
      for await (const status of statuses) if (status.type === "reconnect") void messages.stop(); // lost: made again
    })();
  try {
    for await (const msg of messages) {
      const caughtUp = msg.info.pending === 0;
      lastDelivery = msg.info.deliverySequence;
      onRead(msg.seq);
      options.onStreamSeq?.(msg.seq);
      const stored = decodeStoredEvents(msg.data, `event ${msg.subject} (stream seq ${msg.seq})`);
      if (stored.invalid !== undefined) options.onInvalid?.(msg.subject, stored.invalid);
      let done = false;
      for (const [index, event] of stored.events.entries()) {
        const key = `${turnKey(event.session_id, event.turn_id)}`;
        if (event.seq < (nextSeq.get(key) ?? 0)) continue; // already delivered
        const waiting = held.get(key) ?? new Map<number, EngineEvent>();
        held.set(key, waiting);
        waiting.set(event.seq, event);
        // Caught up at the last event of the last message stored, once nothing is held back behind a gap.
        const lastOfMessage = caughtUp && index === stored.events.length - 1;
        let expected = nextSeq.get(key) ?? 0;
        while (waiting.has(expected) && !done) {
          const next = waiting.get(expected)!;
          waiting.delete(expected);
          expected += 1;
          done = onEvent(next, {
            caughtUp: lastOfMessage && waiting.size === 0 && [...held.values()].every((map) => map.size === 0),
          });
        }
        nextSeq.set(key, expected);
        if (done) break;
      }
      if (done) return "done";
      if (caughtUp && options.untilCaughtUp) {
        flush(held, nextSeq, onEvent);
        return "done";
      }
    }
    if (caughtUpIdle) flush(held, nextSeq, onEvent);
    return stopped ? "done" : "lost";
  } finally {
    clearInterval(idle);
    options.signal?.removeEventListener("abort", stop);
    (statuses as { stop?: () => void } | undefined)?.stop?.();
    stop();
  }
}

/**
 * Reading back, caught up, with events still held behind a gap that will not
 * fill (a seq lost to a bad message): deliver them in seq order rather than
 * leave them out. (Following live, a gap is waited for: the event may be late.)
 * Returns true when the caller asked to stop.
 */
function flush(
  held: Map<string, Map<number, EngineEvent>>,
  nextSeq: Map<string, number>,
  onEvent: (event: EngineEvent, position: { caughtUp: boolean }) => boolean,
): boolean {
  const pending = [...held.entries()].flatMap(([key, map]) => [...map.values()].map((event) => ({ key, event })));
  if (pending.length === 0) return false;
  pending.sort((a, b) => a.event.turn_id - b.event.turn_id || a.event.seq - b.event.seq);
  let stop = false;
  pending.forEach(({ key, event }, index) => {
    held.get(key)?.delete(event.seq);
    nextSeq.set(key, Math.max(nextSeq.get(key) ?? 0, event.seq + 1));
    if (!stop) stop = onEvent(event, { caughtUp: index === pending.length - 1 });
  });
  return stop;
}
