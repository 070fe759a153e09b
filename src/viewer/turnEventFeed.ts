import { setTimeout as sleep } from "node:timers/promises";
import { DeliverPolicy, type JetStreamClient } from "@nats-io/jetstream";
import { subjects } from "../bus/subjects.ts";
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

/** A stored event, read leniently: anything with the four identifying fields is shown; the rest is skipped. */
export function decodeTurnEvent(data: Uint8Array): TurnEventLike | null {
  try {
    const event = JSON.parse(decoder.decode(data)) as Partial<TurnEventLike> | null;
    if (
      typeof event?.session_id !== "string" ||
      typeof event.turn_id !== "number" ||
      typeof event.seq !== "number" ||
      typeof event.kind !== "string"
    )
      return null;
    return event as TurnEventLike;
  } catch {
    return null;
  }
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
          const event = decodeTurnEvent(msg.data);
          if (event) onEvent(event);
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
