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

/**
 * Reads back what is stored for a session (every turn, or one), in log order.
 * Events that fail validation are returned as errors rather than dropped.
 */
export async function readEvents(
  js: JetStreamClient,
  jsm: JetStreamManager,
  sessionId: string,
  turnId?: number,
): Promise<EngineEvent[]> {
  const filter = turnId === undefined ? subjects.sessionEvents(sessionId) : subjects.turnEvents(sessionId, turnId);
  const count = await storedCount(jsm, filter);
  if (count === 0) return [];
  const events: EngineEvent[] = [];
  await followEvents(js, filter, (event) => {
    events.push(event);
    return events.length >= count;
  });
  return events;
}

/**
 * Delivers the stored events under `filter` from the first one, then live ones
 * as they are written, until `onEvent` returns true or `signal` aborts.
 */
export async function followEvents(
  js: JetStreamClient,
  filter: string,
  /** Return true to stop. */
  onEvent: (event: EngineEvent) => boolean,
  signal?: AbortSignal,
): Promise<void> {
  const consumer = await js.consumers.get(streams.events, {
    filter_subjects: filter,
    deliver_policy: DeliverPolicy.All,
  });
  const messages = await consumer.consume();
  const stop = () => void messages.stop();
  signal?.addEventListener("abort", stop, { once: true });
  try {
    for await (const msg of messages) {
      const event = EngineEvent.parse(JSON.parse(decoder.decode(msg.data))) as EngineEvent;
      if (onEvent(event)) break;
    }
  } finally {
    signal?.removeEventListener("abort", stop);
    stop();
  }
}
