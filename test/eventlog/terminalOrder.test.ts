import { type JetStreamClient, jetstream, jetstreamManager } from "@nats-io/jetstream";
import { beforeAll, describe, expect, it } from "vitest";
import { streams, subjects } from "../../src/bus/subjects.ts";
import { EngineEvent } from "../../src/contracts/events.ts";
import { usageSummary } from "../../src/contracts/turnProtocol.ts";
import { ensureEventStream } from "../../src/eventlog/streams.ts";
import { EventLogWriter } from "../../src/eventlog/writer.ts";
import { useNatsServer } from "../helpers/nats.ts";

const nats = useNatsServer();
const decoder = new TextDecoder();

beforeAll(async () => {
  await ensureEventStream(await jetstreamManager(await nats.connect("runner")));
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
    const writer = new EventLogWriter(js);
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
    const consumer = await jetstream(nc).consumers.get(streams.events, {
      filter_subjects: subjects.turnEvents("late", 1),
    });
    const messages = await consumer.fetch({ max_messages: 10, expires: 2_000 });
    for await (const msg of messages) {
      kinds.push(EngineEvent.parse(JSON.parse(decoder.decode(msg.data))).kind);
      if (msg.info.pending === 0) break;
    }
    expect(kinds).toHaveLength(5);
    expect(kinds.at(-1)).toBe("TURN_COMPLETED");
  });
});
