import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import { DeliverPolicy } from "@nats-io/jetstream";
import { streams, subjects } from "../bus/subjects.ts";
import { EngineEvent } from "../contracts/events.ts";

const decoder = new TextDecoder();

/** How many events are stored under a filter right now. */
async function storedCount(jsm: JetStreamManager, filter: string): Promise<number> {
  const info = await jsm.streams.info(streams.events, { subjects_filter: filter });
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
  const filter = turnId === undefined ? subjects.sessionEvents(sessionId) : subjects.turnEvents(sessionId, turnId);
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

/**
 * Delivers the stored events under `filter` from the first one, then live ones
 * as they are written, until `onEvent` returns true or the signal aborts.
 * Within a turn, events are delivered in `seq` order: one stored late (a
 * publish retried across an outage) is held back until the gap before it
 * fills. `caughtUp` is true when nothing more is stored yet.
 */
export async function followEvents(
  js: JetStreamClient,
  filter: string,
  /** Return true to stop. */
  onEvent: (event: EngineEvent, position: { caughtUp: boolean }) => boolean,
  options: FollowOptions = {},
): Promise<void> {
  const consumer = await js.consumers.get(streams.events, {
    filter_subjects: filter,
    deliver_policy: DeliverPolicy.All,
  });
  const messages = await consumer.consume();
  const stop = () => void messages.stop();
  options.signal?.addEventListener("abort", stop, { once: true });
  if (options.signal?.aborted) stop(); // aborted while the consumer was being created
  const nextSeq = new Map<string, number>();
  const held = new Map<string, Map<number, EngineEvent>>();
  try {
    for await (const msg of messages) {
      const caughtUp = msg.info.pending === 0;
      options.onStreamSeq?.(msg.seq);
      const parsed = (() => {
        try {
          return EngineEvent.safeParse(JSON.parse(decoder.decode(msg.data)));
        } catch (error) {
          return { success: false as const, error };
        }
      })();
      if (!parsed.success) {
        options.onInvalid?.(msg.subject, parsed.error);
        if (caughtUp && options.untilCaughtUp) {
          flush(held, nextSeq, onEvent);
          break;
        }
        continue;
      }
      const event = parsed.data as EngineEvent;
      const key = `${event.session_id}.${event.turn_id}`;
      if (event.seq < (nextSeq.get(key) ?? 0)) continue; // already delivered
      const waiting = held.get(key) ?? new Map<number, EngineEvent>();
      held.set(key, waiting);
      waiting.set(event.seq, event);
      let expected = nextSeq.get(key) ?? 0;
      let done = false;
      while (waiting.has(expected) && !done) {
        const next = waiting.get(expected)!;
        waiting.delete(expected);
        expected += 1;
        done = onEvent(next, {
          caughtUp: caughtUp && waiting.size === 0 && [...held.values()].every((map) => map.size === 0),
        });
      }
      nextSeq.set(key, expected);
      if (done) break;
      if (caughtUp && options.untilCaughtUp) {
        flush(held, nextSeq, onEvent);
        break;
      }
    }
  } finally {
    options.signal?.removeEventListener("abort", stop);
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
