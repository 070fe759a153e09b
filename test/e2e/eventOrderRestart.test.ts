/**
 * A turn's events are stored in seq order even across a nats-server
 * restart: a raw JetStream reader (any outside client) sees each turn's
 * events in order, not only our reader, which reorders. Events keep being
 * appended through the outage and after the reconnect, while the publishes
 * lost with the old connection are still to be stored.
 */
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { afterAll, describe, expect, it } from "vitest";
import { busOptions, connectBus } from "../../src/bus/connection.ts";
import { eventStreamOf, subjects } from "../../src/bus/subjects.ts";
import { decodeStoredEvents } from "../../src/contracts/eventBatch.ts";
import { usageSummary } from "../../src/contracts/turnProtocol.ts";
import { DEFAULT_EVENT_STREAMS, ensureEventStreams } from "../../src/eventlog/eventStreams.ts";
import { EventLogWriter } from "../../src/eventlog/writer.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { sleep } from "../helpers/wait.ts";

/** The event log's stream count a runner makes by default. */
const EVENT_STREAMS = DEFAULT_EVENT_STREAMS;

const nats = useNatsServer();
const closers: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const close of closers) await close();
});

/** The turn's events in the order the stream stores them. */
async function storedSeqs(sessionId: string, turnId: number): Promise<number[]> {
  const nc = await nats.connect("observer");
  const consumer = await jetstream(nc).consumers.get(eventStreamOf(sessionId, EVENT_STREAMS), {
    filter_subjects: subjects.turnEvents(sessionId, turnId, EVENT_STREAMS),
  });
  const seqs: number[] = [];
  const messages = await consumer.fetch({ max_messages: 10_000, expires: 2_000 });
  for await (const msg of messages) {
    for (const event of decodeStoredEvents(msg.data, msg.subject).events) seqs.push(event.seq);
    if (msg.info.pending === 0) break;
  }
  return seqs;
}

describe("events across a nats-server restart", () => {
  it("are stored in seq order: appended before, during and after the outage", async () => {
    const nc = await connectBus(busOptions("runner", { servers: nats.url, persistent: true }));
    closers.push(() => nc.close());
    await ensureEventStreams(await jetstreamManager(nc));
    const writer = new EventLogWriter(jetstream(nc), EVENT_STREAMS);
    const append = () =>
      writer.append("restart-order", 1, { kind: "TURN_STAGE_CHANGED", payload: { stage: "deliberation" } });

    writer.append("restart-order", 1, { kind: "TURN_STARTED", payload: { user_input: "hi", turn_id: 1 } });
    for (let i = 0; i < 20; i++) append();
    await writer.flushed("restart-order", 1);

    // A steady stream of events through the outage: some go out on the dying connection and are lost.
    const reconnected = (async () => {
      for await (const status of nc.status()) if (status.type === "reconnect") return;
    })();
    let appending = true;
    const appender = (async () => {
      while (appending) {
        append();
        await sleep(5);
      }
    })();
    await sleep(50);
    await nats.restart(300);
    await reconnected;
    // Events appended right after the reconnect, while the lost ones wait for their retry.
    await sleep(200);
    appending = false;
    await appender;
    writer.append("restart-order", 1, {
      kind: "TURN_COMPLETED",
      payload: { response: "ok", outcome: { status: "Complete" }, usage: usageSummary({}) },
    });
    const count = await writer.finish("restart-order", 1);

    const seqs = await storedSeqs("restart-order", 1);
    expect(seqs).toHaveLength(count);
    expect(seqs).toEqual(Array.from({ length: count }, (_, i) => i));
  });
});
