import { setTimeout as sleep } from "node:timers/promises";
import { DeliverPolicy, type JetStreamClient } from "@nats-io/jetstream";
import { subjects } from "../bus/subjects.ts";
import { rawEventsOf } from "../contracts/eventBatch.ts";
import { messageOf } from "../errors.ts";
import { orderedConsumer, releaseConsumer } from "../eventlog/consumers.ts";
import { eventStreamCount, eventStreamNames } from "../eventlog/eventStreams.ts";

/** The fields of a stored turn event the viewer shows; the rest of the payload is passed through as it is. */
export interface TurnEventLike {
  session_id: string;
  turn_id: number;
  seq: number;
  kind: string;
  ts_monotonic?: number;
  payload?: unknown;
}

const decoder = new TextDecoder();

/** One stored event's JSON, read leniently: anything with the four identifying fields is shown. */
function turnEventLike(json: unknown): TurnEventLike | null {
  const event = json as Partial<TurnEventLike> | null;
  if (
    typeof event?.session_id !== "string" ||
    typeof event.turn_id !== "number" ||
    typeof event.seq !== "number" ||
    typeof event.kind !== "string"
  )
    return null;
  return event as TurnEventLike;
}

/**
 * A stored message's events, read leniently (`turnEventLike`): its event, or a batch's (format 2,
 * contracts/eventBatch.ts); null when it holds none the viewer can show.
 */
export function decodeTurnEvents(data: Uint8Array): TurnEventLike[] | null {
  let json: unknown;
  try {
    json = JSON.parse(decoder.decode(data));
  } catch {
    return null;
  }
  const events = rawEventsOf(json)
    .map(turnEventLike)
    .filter((event) => event !== null);
  return events.length > 0 ? events : null;
}

/**
 * Delivers the turn events written to `conclave.events.>` from now on, until
 * `signal` aborts: every session's events from the moment of the call (the
 * event-log reader reads one session or turn from its start), from each of the
 * log's streams. A bad message is skipped, and a lost stream or connection is
 * retried, resuming after the last event seen.
 */
export async function followTurnEvents(
  js: JetStreamClient,
  onEvent: (event: TurnEventLike) => void,
  signal: AbortSignal,
  onProblem: (message: string) => void = () => {},
  retryMs = 1_000,
): Promise<void> {
  // From the moment of the call, even if the streams only appear later.
  const since = new Date().toISOString();
  let count: number | null = null;
  while (count === null && !signal.aborted) {
    try {
      count = await eventStreamCount(await js.jetstreamManager());
    } catch (error) {
      onProblem(`turn events: ${messageOf(error)}; retrying`);
      await sleep(retryMs, undefined, { signal }).catch(() => {});
    }
  }
  if (count === null) return;
  await Promise.all(
    eventStreamNames(count).map((stream) => followStream(js, stream, since, onEvent, signal, onProblem, retryMs)),
  );
}

async function followStream(
  js: JetStreamClient,
  stream: string,
  since: string,
  onEvent: (event: TurnEventLike) => void,
  signal: AbortSignal,
  onProblem: (message: string) => void,
  retryMs: number,
): Promise<void> {
  let lastSeq = 0;
  while (!signal.aborted) {
    try {
      const consumer = await orderedConsumer(js, stream, {
        filter_subjects: subjects.allEvents,
        ...(lastSeq > 0
          ? { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: lastSeq + 1 }
          : { deliver_policy: DeliverPolicy.StartTime, opt_start_time: since }),
      });
      const messages = await consumer.consume();
      const stop = () => void messages.stop();
      signal.addEventListener("abort", stop, { once: true });
      try {
        for await (const msg of messages) {
          lastSeq = msg.seq;
          const events = decodeTurnEvents(msg.data);
          if (events) for (const event of events) onEvent(event);
          else onProblem(`skipped a message on ${msg.subject} that is not a turn event`);
        }
      } finally {
        signal.removeEventListener("abort", stop);
        await releaseConsumer(consumer);
      }
    } catch (error) {
      if (signal.aborted) return;
      onProblem(`turn events: ${messageOf(error)}; retrying`);
    }
    await sleep(retryMs, undefined, { signal }).catch(() => {});
  }
}
