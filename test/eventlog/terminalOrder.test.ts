import { type JetStreamClient, jetstream, jetstreamManager } from "@nats-io/jetstream";
import { beforeAll, describe, expect, it } from "vitest";
import { eventStreamOf, subjects } from "../../src/bus/subjects.ts";
import { decodeStoredEvents } from "../../src/contracts/eventBatch.ts";
import { usageSummary } from "../../src/contracts/turnProtocol.ts";
import { DEFAULT_EVENT_STREAMS, ensureEventStreams } from "../../src/eventlog/eventStreams.ts";
import { EventLogWriter } from "../../src/eventlog/writer.ts";
import { useNatsServer } from "../helpers/nats.ts";

/** The event log's stream count a runner makes by default. */
const EVENT_STREAMS = DEFAULT_EVENT_STREAMS;

const nats = useNatsServer();

beforeAll(async () => {
  await ensureEventStreams(await jetstreamManager(await nats.connect("runner")));
});

/**
 * The real JetStream client, except that the publish of one event (`hold`, by
 * its message id) is sent only once the publish of a later one (`after`) is
 * acknowledged: what a publish retried across a NATS restart looks like to
 * the stream — it lands after events appended later.
 */
function holdingOne(js: JetStreamClient, hold: string, after: string): JetStreamClient {
  let release!: () => void;
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  return new Proxy(js, {
    get(target, property, receiver) {
      if (property !== "publish") return Reflect.get(target, property, receiver);
      return async (...args: Parameters<JetStreamClient["publish"]>) => {
        if (args[2]?.msgID === hold) await released;
        const ack = await target.publish(...args);
        if (args[2]?.msgID === after) release();
        return ack;
      };
    },
  });
}

describe("a turn's terminal event", () => {
  it("is stored after every earlier event of the turn, even when one of them is stored late", async () => {
    const nc = await nats.connect("runner");
    // Event 2 is stored only after event 3 is: publishes sent after event 3's (the terminal one, before this
    // fix) reach the stream before it.
    const js = holdingOne(jetstream(nc), "late.1.2", "late.1.3");
    const writer = new EventLogWriter(js, EVENT_STREAMS);
    writer.append("late", 1, { kind: "TURN_STARTED", payload: { user_input: "hi", turn_id: 1 } });
    writer.append("late", 1, { kind: "TURN_STAGE_CHANGED", payload: { stage: "ingest" } });
    writer.append("late", 1, { kind: "TURN_STAGE_CHANGED", payload: { stage: "sensing_fast" } });
    writer.append("late", 1, { kind: "TURN_STAGE_CHANGED", payload: { stage: "context" } });
    writer.append("late", 1, {
      kind: "TURN_COMPLETED",
      payload: {
        response: "hello",
        outcome: { status: "Complete" },
        usage: usageSummary({}),
      },
    });
    expect(await writer.finish("late", 1)).toBe(5);

    // Stream order, not seq order: what a reader that stops at the terminal event sees.
    const kinds: string[] = [];
    const consumer = await jetstream(nc).consumers.get(eventStreamOf("late", EVENT_STREAMS), {
      filter_subjects: subjects.turnEvents("late", 1, EVENT_STREAMS),
    });
    const messages = await consumer.fetch({ max_messages: 10, expires: 2_000 });
    for await (const msg of messages) {
      for (const event of decodeStoredEvents(msg.data, msg.subject).events) kinds.push(event.kind);
      if (msg.info.pending === 0) break;
    }
    expect(kinds).toHaveLength(5);
    expect(kinds.at(-1)).toBe("TURN_COMPLETED");
  });

  it("comes before the session's next turn starts, even when that turn was queued before it", async () => {
    const nc = await nats.connect("runner");
    // Turn 1's end is stored only when released: turn 2, queued meanwhile, must not start in the log before it.
    let release!: () => void;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    const real = jetstream(nc);
    const js = new Proxy(real, {
      get(target, property, receiver) {
        if (property !== "publish") return Reflect.get(target, property, receiver);
        return async (...args: Parameters<JetStreamClient["publish"]>) => {
          if (args[2]?.msgID === "queued.1.1") await released;
          return target.publish(...args);
        };
      },
    });
    const writer = new EventLogWriter(js, EVENT_STREAMS);
    writer.append("queued", 1, { kind: "TURN_STARTED", payload: { user_input: "first", turn_id: 1 } });
    await writer.flushed("queued", 1);
    writer.append("queued", 2, { kind: "TURN_QUEUED", payload: { position: 1 } });
    await writer.flushed("queued", 2);
    writer.append("queued", 1, {
      kind: "TURN_COMPLETED",
      payload: { response: "one", outcome: { status: "Complete" }, usage: usageSummary({}) },
    });
    writer.append("queued", 2, { kind: "TURN_STARTED", payload: { user_input: "second", turn_id: 2 } });
    await new Promise((resolve) => setImmediate(resolve)); // a start sent without waiting would be on its way now
    release();
    await Promise.all([writer.finish("queued", 1), writer.finish("queued", 2)]);

    const order: string[] = [];
    const consumer = await jetstream(nc).consumers.get(eventStreamOf("queued", EVENT_STREAMS), {
      filter_subjects: subjects.sessionEvents("queued", EVENT_STREAMS),
    });
    const messages = await consumer.fetch({ max_messages: 10, expires: 2_000 });
    for await (const msg of messages) {
      for (const event of decodeStoredEvents(msg.data, msg.subject).events)
        order.push(`${event.turn_id}:${event.kind}`);
      if (msg.info.pending === 0) break;
    }
    expect(order).toEqual(["1:TURN_STARTED", "2:TURN_QUEUED", "1:TURN_COMPLETED", "2:TURN_STARTED"]);
  });
});
