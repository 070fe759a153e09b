import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { subjects } from "../../src/bus/subjects.ts";
import { type ConclaveClient, connect } from "../../src/client/index.ts";
import { submitTurn, watchTurn } from "../../src/client/turns.ts";
import { type EngineEvent, LiveChunk } from "../../src/contracts/events.ts";
import { usageSummary } from "../../src/contracts/turnProtocol.ts";
import { type Schedule, STREAM_CHUNK_ENV } from "../../src/eventlog/chunkCoalescer.ts";
import { DEFAULT_EVENT_STREAMS, eventStreamCount } from "../../src/eventlog/eventStreams.ts";
import { readEvents } from "../../src/eventlog/reader.ts";
import { EventLogWriter } from "../../src/eventlog/writer.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { useInProcessStack } from "../helpers/stack.ts";

/** The event log's stream count a runner makes by default. */
const EVENT_STREAMS = DEFAULT_EVENT_STREAMS;

// The runner's chunks are stored only before another event or at 4 KiB, never for their age: what is stored
// coalesced does not depend on how fast this machine delivers them.
const chunkMsBefore = process.env[STREAM_CHUNK_ENV.chunkMs];
process.env[STREAM_CHUNK_ENV.chunkMs] = "60000";
afterAll(() => {
  if (chunkMsBefore === undefined) delete process.env[STREAM_CHUNK_ENV.chunkMs];
  else process.env[STREAM_CHUNK_ENV.chunkMs] = chunkMsBefore;
});

const nats = useNatsServer();
useInProcessStack(nats);
let nc: NatsConnection;
let client: ConclaveClient;

beforeAll(async () => {
  nc = await nats.connect("client");
  client = await connect({ nc });
});

type Chunk = Extract<EngineEvent, { kind: "STREAM_CHUNK" }>;
const chunksOf = (events: readonly EngineEvent[], streamId = "default"): Chunk[] =>
  events.filter((event): event is Chunk => event.kind === "STREAM_CHUNK" && event.payload.stream_id === streamId);
const textOf = (chunks: readonly { payload: { delta: string } }[]) =>
  chunks.map((chunk) => chunk.payload.delta).join("");

/** Collects a turn's live chunks (core NATS) as they come. Call `done` once the turn is over. */
async function listenLive(on: NatsConnection, sessionId: string, turnId: number) {
  const live: LiveChunk[] = [];
  const sub = on.subscribe(subjects.liveChunks(sessionId, turnId), {
    callback: (error, msg) => {
      if (!error) live.push(LiveChunk.parse(msg.json()));
    },
  });
  await on.flush(); // subscribed before anything is published
  return {
    live,
    /** Every live chunk published before `publisher` flushed has reached `on` once this resolves. */
    async done(publisher: NatsConnection = on) {
      await publisher.flush();
      await on.flush();
      sub.unsubscribe();
      return live;
    },
  };
}

describe("a turn's stream chunks, on a runner and workers", () => {
  it("go out live one by one, are stored coalesced with contiguous seqs, and are the same text", async () => {
    const listening = await listenLive(nc, "coalesced", 1);
    const turn = client.submit("coalesced", "I'm stressed about my deadline");
    const iterated: EngineEvent[] = [];
    for await (const event of turn) iterated.push(event);
    const result = await turn.result;
    const live = await listening.done(); // the log's TURN_COMPLETED reached `nc` after every live chunk
    const stored = await readEvents(jetstream(nc), await jetstreamManager(nc), "coalesced", 1);

    expect(stored.map((event) => event.seq)).toEqual(stored.map((_, index) => index));
    const liveReply = live.filter((chunk) => chunk.payload.stream_id === "default");
    const storedReply = chunksOf(stored);
    expect(result.response.length).toBeGreaterThan(0);
    expect(textOf(liveReply)).toBe(result.response);
    expect(textOf(storedReply)).toBe(result.response);
    expect(storedReply.length).toBeLessThan(liveReply.length);
    // Stored: runs of consecutive live chunks, `index` their first, `chunks` how many.
    let next = 0;
    for (const chunk of storedReply) {
      expect(chunk.payload.index).toBe(next);
      next += chunk.payload.chunks ?? 1;
    }
    expect(next).toBe(liveReply.length);
    expect(liveReply.map((chunk) => chunk.payload.index)).toEqual(liveReply.map((_, index) => index));
    // Each live chunk names the stored event that holds it, and the stored events it follows.
    for (const chunk of live) {
      const holder = stored[chunk.seq];
      expect(holder?.kind).toBe("STREAM_CHUNK");
      if (holder?.kind !== "STREAM_CHUNK") continue;
      expect(holder.payload.stream_id).toBe(chunk.payload.stream_id);
      expect(chunk.payload.index).toBeGreaterThanOrEqual(holder.payload.index);
      expect(chunk.payload.index).toBeLessThan(holder.payload.index + (holder.payload.chunks ?? 1));
      expect(chunk.after_seq).toBeLessThan(chunk.seq);
    }
    // The client's iteration gives each piece of text once: live where it saw it, else from the log. (It
    // subscribed once acked, long before the voice spoke: it saw the reply live, chunk by chunk.)
    expect(textOf(chunksOf(iterated))).toBe(result.response);
    expect(chunksOf(iterated).length).toBe(liveReply.length);
    expect(textOf(chunksOf(iterated, "thinking"))).toBe(textOf(chunksOf(stored, "thinking")));
    expect(iterated.filter((event) => event.kind !== "STREAM_CHUNK")).toEqual(
      stored.filter((event) => event.kind !== "STREAM_CHUNK"),
    );
    expect([...new Set(iterated.map((event) => event.seq))]).toEqual(stored.map((event) => event.seq));
  });

  it("watched through a runner (as a tenant does), come live too, each piece of text once", async () => {
    const ack = await submitTurn(nc, "coalesced-watch", { text: "I'm stressed about my deadline" });
    const watched: EngineEvent[] = [];
    const completed = await watchTurn(nc, { ...ack, events_subject: subjects.turnWatch(ack.session_id) }, (event) =>
      watched.push(event),
    );
    const stored = await readEvents(jetstream(nc), await jetstreamManager(nc), "coalesced-watch", 1);
    expect(textOf(chunksOf(watched))).toBe(completed.payload.response);
    // The runner relayed the reply chunk by chunk (its watch began when acked, long before the voice spoke).
    expect(chunksOf(watched).length).toBeGreaterThan(chunksOf(stored).length);
    expect(watched.filter((event) => event.kind !== "STREAM_CHUNK")).toEqual(
      stored.filter((event) => event.kind !== "STREAM_CHUNK"),
    );
  });

  it("read back later (no live chunks), give the same events as the log", async () => {
    const done = await client.submit("coalesced-late", "I'm stressed about my deadline").result;
    const stored = await readEvents(jetstream(nc), await jetstreamManager(nc), "coalesced-late", 1);
    const replayed: EngineEvent[] = [];
    const ack = {
      session_id: "coalesced-late",
      turn_id: 1,
      events_subject: subjects.turnEvents("coalesced-late", 1, await eventStreamCount(nc)),
    };
    await watchTurn(nc, { ...ack, duplicate: false }, (event) => replayed.push(event));
    expect(replayed).toEqual(stored);
    expect(textOf(chunksOf(replayed))).toBe(done.response);
  });
});

/** A schedule that never fires: only the size and the writer's own flushes store chunks. */
const never: Schedule = () => () => {};

describe("the event log writer's chunks", () => {
  const started = { kind: "TURN_STARTED", payload: { user_input: "hi", turn_id: 1 } } as const;
  const completed = {
    kind: "TURN_COMPLETED",
    payload: { response: "one two three", outcome: { status: "Complete" }, usage: usageSummary({}) },
  } as const;
  const words = ["one", " two", " three"];

  async function writeTurn(sessionId: string, options: { chunkMs: number; chunkBytes?: number }) {
    const runner = await nats.connect("runner");
    const listening = await listenLive(nc, sessionId, 1);
    const writer = new EventLogWriter(jetstream(runner), EVENT_STREAMS, {
      live: runner,
      schedule: never,
      ...options,
    });
    writer.append(sessionId, 1, started);
    writer.append(sessionId, 1, {
      kind: "STREAM_START",
      payload: { stream_id: "default", content_type: "text/plain", attempt: 1 },
    });
    for (const [index, delta] of words.entries())
      writer.append(sessionId, 1, { kind: "STREAM_CHUNK", payload: { stream_id: "default", index, delta } });
    writer.append(sessionId, 1, { kind: "STREAM_END", payload: { stream_id: "default", chunks: words.length } });
    writer.append(sessionId, 1, completed);
    const count = await writer.finish(sessionId, 1);
    const live = await listening.done(runner);
    const stored = await readEvents(jetstream(nc), await jetstreamManager(nc), sessionId, 1);
    expect(stored).toHaveLength(count);
    expect(stored.map((event) => event.seq)).toEqual(stored.map((_, index) => index));
    expect(live.map((chunk) => chunk.payload)).toEqual(
      words.map((delta, index) => ({ stream_id: "default", index, delta })),
    );
    return { stored, live };
  }

  it("stores a run of chunks as one, before the event after them", async () => {
    const { stored, live } = await writeTurn("writer-coalesced", { chunkMs: 25 });
    expect(stored.map((event) => event.kind)).toEqual([
      "TURN_STARTED",
      "STREAM_START",
      "STREAM_CHUNK",
      "STREAM_END",
      "TURN_COMPLETED",
    ]);
    expect(stored[2]?.payload).toEqual({ stream_id: "default", index: 0, delta: "one two three", chunks: 3 });
    expect(live.map((chunk) => [chunk.seq, chunk.after_seq])).toEqual([
      [2, 1],
      [2, 1],
      [2, 1],
    ]);
  });

  it("stores the run once the buffered text reaches chunkBytes", async () => {
    const { stored } = await writeTurn("writer-bytes", { chunkMs: 25, chunkBytes: 4 });
    // "one" (3 bytes) waits; " two" makes 7: stored; " three" waits for STREAM_END.
    expect(chunksOf(stored).map((chunk) => chunk.payload)).toEqual([
      { stream_id: "default", index: 0, delta: "one two", chunks: 2 },
      { stream_id: "default", index: 2, delta: " three" },
    ]);
  });

  it("stores every chunk as its own event with chunkMs 0 (and still sends them live)", async () => {
    const { stored, live } = await writeTurn("writer-uncoalesced", { chunkMs: 0 });
    expect(chunksOf(stored).map((chunk) => chunk.payload)).toEqual(
      words.map((delta, index) => ({ stream_id: "default", index, delta })),
    );
    expect(live.map((chunk) => chunk.seq)).toEqual(chunksOf(stored).map((chunk) => chunk.seq));
  });

  it("stores what is buffered when the turn is flushed", async () => {
    const runner = await nats.connect("runner");
    const writer = new EventLogWriter(jetstream(runner), EVENT_STREAMS, {
      schedule: never,
      chunkMs: 25,
    });
    writer.append("writer-flushed", 1, started);
    writer.append("writer-flushed", 1, { kind: "STREAM_CHUNK", payload: { stream_id: "s", index: 0, delta: "held" } });
    await writer.flushed("writer-flushed", 1);
    const stored = await readEvents(jetstream(nc), await jetstreamManager(nc), "writer-flushed", 1);
    expect(stored.map((event) => event.kind)).toEqual(["TURN_STARTED", "STREAM_CHUNK"]);
    writer.abandon("writer-flushed", 1);
  });
});
