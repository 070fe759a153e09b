/**
 * A turn's events stored in batches (issue 37, docs/protocol.md "Reading a turn's events"): the
 * events appended while earlier ones are being stored go out as one message, read back as the events
 * they hold; a batch publish retried after a lost acknowledgement is stored once; a batch stays under
 * its byte bound; a writer with batches off stores one message per event.
 */
import { type JetStreamClient, jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import { beforeAll, describe, expect, it } from "vitest";
import { eventStreamOf, subjects } from "../../src/bus/subjects.ts";
import { decodeStoredEvents, EVENT_COUNT_HEADER, eventCountOf } from "../../src/contracts/eventBatch.ts";
import { usageSummary } from "../../src/contracts/turnProtocol.ts";
import { DEFAULT_EVENT_STREAMS, ensureEventStreams } from "../../src/eventlog/eventStreams.ts";
import { readEvents } from "../../src/eventlog/reader.ts";
import { MAX_BATCH_BYTES } from "../../src/eventlog/turnFencing.ts";
import { EventLogWriter } from "../../src/eventlog/writer.ts";
import { useNatsServer } from "../helpers/nats.ts";

const EVENT_STREAMS = DEFAULT_EVENT_STREAMS;
const nats = useNatsServer();

beforeAll(async () => {
  await ensureEventStreams(await jetstreamManager(await nats.connect("runner")));
});

/** Every stored message of a turn, as stored: its `v`, its events' seqs and its count header. */
async function storedMessages(nc: NatsConnection, session: string, turn: number) {
  const consumer = await jetstream(nc).consumers.get(eventStreamOf(session, EVENT_STREAMS), {
    filter_subjects: subjects.turnEvents(session, turn, EVENT_STREAMS),
  });
  const found: { v: unknown; seqs: number[]; count: number }[] = [];
  const messages = await consumer.fetch({ max_messages: 1_000, expires: 2_000 });
  for await (const msg of messages) {
    found.push({
      v: msg.json<{ v?: unknown }>().v,
      seqs: decodeStoredEvents(msg.data, msg.subject).events.map((event) => event.seq),
      count: eventCountOf(msg.headers?.get(EVENT_COUNT_HEADER)),
    });
    if (msg.info.pending === 0) break;
  }
  return found;
}

/** A turn: its start, `stages` stage changes appended at once, then its end. */
async function writeTurn(writer: EventLogWriter, session: string, stages: number, note = ""): Promise<number> {
  writer.append(session, 1, { kind: "TURN_STARTED", payload: { user_input: "hi", turn_id: 1 } });
  await writer.flushed(session, 1);
  for (let i = 0; i < stages; i++)
    writer.append(session, 1, {
      kind: "VOICE_RENDERED",
      payload: { text: `${note}${i}`, attempt: 1 },
    });
  writer.append(session, 1, {
    kind: "TURN_COMPLETED",
    payload: { response: "hello", outcome: { status: "Complete" }, usage: usageSummary({}) },
  });
  return writer.finish(session, 1);
}

describe("a turn's events in batches", () => {
  it("stores the events appended at once as one message, its first and terminal events alone", async () => {
    const nc = await nats.connect("runner");
    expect(await writeTurn(new EventLogWriter(jetstream(nc), EVENT_STREAMS, { batches: true }), "batched", 5)).toBe(7);
    expect(await storedMessages(nc, "batched", 1)).toEqual([
      { v: 1, seqs: [0], count: 1 },
      { v: 2, seqs: [1, 2, 3, 4, 5], count: 5 },
      { v: 1, seqs: [6], count: 1 },
    ]);
    const events = await readEvents(jetstream(nc), await jetstreamManager(nc), "batched", 1);
    expect(events.map((event) => event.seq)).toEqual([0, 1, 2, 3, 4, 5, 6]);
    expect(events.at(-1)?.kind).toBe("TURN_COMPLETED");
  });

  it("stores one message per event with batches off (as releases before 0.3.0 read)", async () => {
    const nc = await nats.connect("runner");
    expect(await writeTurn(new EventLogWriter(jetstream(nc), EVENT_STREAMS, { batches: false }), "alone", 5)).toBe(7);
    const stored = await storedMessages(nc, "alone", 1);
    expect(stored.map((message) => message.seqs)).toEqual([[0], [1], [2], [3], [4], [5], [6]]);
    expect(stored.every((message) => message.v === 1 && message.count === 1)).toBe(true);
  });

  it("stores a batch once when its acknowledgement was lost and it is published again", async () => {
    const nc = await nats.connect("runner");
    const real = jetstream(nc);
    let lost = 0;
    // The batch's first publish is stored, but its acknowledgement never comes back: the writer tries again.
    const js = new Proxy(real, {
      get(target, property, receiver) {
        if (property !== "publish") return Reflect.get(target, property, receiver);
        return async (...args: Parameters<JetStreamClient["publish"]>) => {
          const ack = await target.publish(...args);
          if (args[2]?.msgID === "lost-ack.1.1" && lost++ === 0) throw new Error("timeout: no acknowledgement");
          return ack;
        };
      },
    });
    // The copy answered as a duplicate may be another writer's: as for one event retried, this writer does
    // not count it as its own, so its TURN_COMPLETED is fenced and the turn is taken over from the log.
    await expect(writeTurn(new EventLogWriter(js, EVENT_STREAMS, { batches: true }), "lost-ack", 3)).rejects.toThrow(
      /being written by another runner/,
    );
    expect(lost).toBe(2);
    expect((await storedMessages(nc, "lost-ack", 1)).map((message) => message.seqs)).toEqual([[0], [1, 2, 3]]);
  });

  it("keeps a batch within its byte bound: larger runs are split, in order", async () => {
    const nc = await nats.connect("runner");
    const writer = new EventLogWriter(jetstream(nc), EVENT_STREAMS, { batches: true });
    // Eight events of 60 KiB each: more than one batch's bound.
    expect(await writeTurn(writer, "large", 8, "x".repeat(60 * 1024))).toBe(10);
    const stored = await storedMessages(nc, "large", 1);
    expect(stored.length).toBeGreaterThan(3);
    expect(stored.flatMap((message) => message.seqs)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    for (const message of stored) expect(message.count).toBe(message.seqs.length);
    const sizes = stored.map((message) => message.seqs.length * 60 * 1024);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(MAX_BATCH_BYTES);
  });
});
