import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { beforeAll, describe, expect, it } from "vitest";
import { encodeRecord } from "../../src/bus/codec.ts";
import { subjects } from "../../src/bus/subjects.ts";
import { CONCLAVE_BIN } from "../../src/cli/childProcess.ts";
import {
  type ConclaveClient,
  connect,
  type EngineEvent,
  InvalidRequestError,
  type SessionEvent,
  TurnTimeoutError,
} from "../../src/client/index.ts";
import { usageSummary } from "../../src/contracts/turnProtocol.ts";
import { isConclaveError } from "../../src/errors.ts";
import { DEFAULT_EVENT_STREAMS } from "../../src/eventlog/eventStreams.ts";
import { readEvents } from "../../src/eventlog/reader.ts";
import { EventLogWriter } from "../../src/eventlog/writer.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { useInProcessStack } from "../helpers/stack.ts";
import { eventually } from "../helpers/wait.ts";

const nats = useNatsServer();
useInProcessStack(nats);
const run = promisify(execFile);
let client: ConclaveClient;

beforeAll(async () => {
  client = await connect({ nc: await nats.connect("client") });
});

const collect = async <T>(items: AsyncIterable<T>): Promise<T[]> => {
  const all: T[] = [];
  for await (const item of items) all.push(item);
  return all;
};

/**
 * A turn's events in log order: every seq once, but for stream chunks that came live (several share the seq of
 * the stored chunk that holds them); the other events in seq order.
 */
function expectLogOrder(events: readonly EngineEvent[]): void {
  const others = events.filter((event) => event.kind !== "STREAM_CHUNK").map((event) => event.seq);
  expect(others).toEqual([...others].sort((a, b) => a - b));
  const seqs = [...new Set(events.map((event) => event.seq))].sort((a, b) => a - b);
  expect(seqs).toEqual(seqs.map((_, index) => index));
}

/** `conclave events` in a process of its own, one `{position, event}` JSON line each. */
async function eventsFromAnotherProcess(sessionId: string, fromSeq?: number): Promise<SessionEvent[]> {
  const { stdout } = await run(
    process.execPath,
    [
      CONCLAVE_BIN,
      "events",
      "--session",
      sessionId,
      "--json",
      "--positions",
      ...(fromSeq === undefined ? [] : ["--from-seq", String(fromSeq)]),
    ],
    { env: { ...process.env, CONCLAVE_NATS_URL: nats.url, CONCLAVE_LOG: "quiet" } },
  );
  return stdout
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line) as SessionEvent);
}

describe("submit", () => {
  it("iterates the turn's typed events, in order, ending with TURN_COMPLETED, and resolves its result", async () => {
    const turn = client.submit("client-1", "I'm stressed about my deadline");
    const events: EngineEvent[] = [];
    let reply = "";
    for await (const event of turn) {
      events.push(event);
      // Typed: narrowing on kind gives the payload's shape.
      if (event.kind === "STREAM_CHUNK" && event.payload.stream_id === "default") reply += event.payload.delta;
    }
    expect(await turn.ack).toMatchObject({ session_id: "client-1", turn_id: 1, duplicate: false });
    expectLogOrder(events);
    expect(events[0]?.kind).toBe("TURN_STARTED");
    const completed = events.at(-1);
    if (completed?.kind !== "TURN_COMPLETED") throw new Error(`the last event is ${completed?.kind}`);
    const result = await turn.result;
    expect(result).toEqual({
      sessionId: "client-1",
      turnId: 1,
      outcome: completed.payload.outcome,
      response: completed.payload.response,
      usage: completed.payload.usage,
      totalTimeMs: completed.payload.total_time_ms,
    });
    expect(["Complete", "PartialSuccess"]).toContain(result.outcome.status);
    expect(result.response.length).toBeGreaterThan(0);
    expect(reply).toBe(result.response);
  });

  it("buffers the events: iterating after the result misses nothing, and iterating twice gives the same", async () => {
    const turn = client.submit("client-1", "and one more thing");
    const result = await turn.result;
    const late = await collect(turn);
    expect(late[0]).toMatchObject({ kind: "TURN_STARTED", turn_id: result.turnId, seq: 0 });
    expect(late.at(-1)).toMatchObject({ kind: "TURN_COMPLETED", payload: { response: result.response } });
    expectLogOrder(late);
    expect(await collect(turn)).toEqual(late);
  });

  it("with an idempotency key already used returns the first turn and runs nothing", async () => {
    const first = client.submit("client-2", "remember this", { idempotencyKey: "message-1" });
    const done = await first.result;
    const again = client.submit("client-2", "remember this", { idempotencyKey: "message-1" });
    expect(await again.ack).toMatchObject({ session_id: "client-2", turn_id: done.turnId, duplicate: true });
    expect((await again.result).response).toBe(done.response);
    const events = await collect(client.events("client-2"));
    expect(events.filter(({ event }) => event.kind === "TURN_COMPLETED")).toHaveLength(1);
    expect(await client.turns("client-2")).toHaveLength(1);
  });

  it("rejects ack, result and iteration with the submission's named error", async () => {
    const turn = client.submit("not a session!", "hello");
    const error = await turn.ack.catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(InvalidRequestError);
    expect(isConclaveError(error) && error.code).toBe("invalid_request");
    await expect(turn.result).rejects.toBe(error);
    await expect(collect(turn)).rejects.toBe(error);
    // Refused by the runner: the same code, from its reply.
    const empty = client.submit("client-4", "   ");
    await expect(empty.ack).rejects.toMatchObject({ code: "invalid_request", message: expect.stringMatching(/text/) });
    await expect(empty.result).rejects.toMatchObject({ code: "invalid_request" });
  });

  it("refuses ids that cannot be ones before sending anything", async () => {
    await expect(client.status("a.b", 1)).rejects.toBeInstanceOf(InvalidRequestError);
    await expect(client.cancel("client-1", 0)).rejects.toBeInstanceOf(InvalidRequestError);
    await expect(client.turns("")).rejects.toBeInstanceOf(InvalidRequestError);
    await expect(collect(client.events("client-1", { fromSeq: 0 }))).rejects.toBeInstanceOf(InvalidRequestError);
  });

  it("gives up after timeoutMs with TurnTimeoutError", async () => {
    const turn = client.submit("client-3", "quick, please", { timeoutMs: 1 });
    const error = await turn.result.catch((caught: unknown) => caught);
    expect(error).toMatchObject({ code: "turn_timeout", sessionId: "client-3", turnId: 1 });
    expect(error).toBeInstanceOf(TurnTimeoutError);
  });
});

describe("events", () => {
  let all: SessionEvent[] = [];
  /** The index of the last event stored at the position of `all[index]` (a batch's last): resuming after it misses none. */
  const lastAtPosition = (index: number): number => all.findLastIndex((item) => item.position === all[index]!.position);

  beforeAll(async () => {
    // client-1's turns lie before client-2's in the log: reading client-1 past its end must not wait for more.
    all = await collect(client.events("client-1"));
  });

  it("reads a session's stored events in log order, each with its position", async () => {
    const positions = all.map(({ position }) => position);
    expect(positions).toEqual([...positions].sort((a, b) => a - b));
    // Events stored in one batch share their position (docs/protocol.md): fewer positions than events.
    expect(new Set(positions).size).toBeLessThan(positions.length);
    expect(all.filter(({ event }) => event.kind === "TURN_COMPLETED").map(({ event }) => event.turn_id)).toEqual([
      1, 2,
    ]);
    const turnTwo = await collect(client.events("client-1", { turnId: 2 }));
    expect(turnTwo).toEqual(all.filter(({ event }) => event.turn_id === 2));
  });

  it("delivers an event stored twice under its id once (a retried publish across a leader change)", async () => {
    const nc = await nats.connect("runner");
    const writer = new EventLogWriter(jetstream(nc), DEFAULT_EVENT_STREAMS);
    writer.append("stored-twice", 1, { kind: "TURN_STARTED", payload: { user_input: "hi", turn_id: 1 } });
    writer.append("stored-twice", 1, {
      kind: "TURN_COMPLETED",
      payload: { response: "", outcome: { status: "Complete" }, usage: usageSummary({}) },
    });
    await writer.finish("stored-twice", 1);
    const [, completed] = await readEvents(jetstream(nc), await jetstreamManager(nc), "stored-twice", 1);
    // What JetStream stores when its deduplication misses: the same message again, under the same id.
    await jetstream(nc).publish(
      subjects.turnEvents("stored-twice", 1, DEFAULT_EVENT_STREAMS),
      encodeRecord(completed!),
    );
    const read = await collect(client.events("stored-twice"));
    expect(read.map(({ event }) => `${event.seq} ${event.kind}`)).toEqual(["0 TURN_STARTED", "1 TURN_COMPLETED"]);
  });

  it("resumes exactly after a position (fromSeq: position + 1), and past the last one reads nothing", async () => {
    const middle = lastAtPosition(Math.floor(all.length / 2));
    const resumed = await collect(client.events("client-1", { fromSeq: all[middle]!.position + 1 }));
    expect(resumed).toEqual(all.slice(middle + 1));
    expect(await collect(client.events("client-1", { fromSeq: all.at(-1)!.position + 1 }))).toEqual([]);
    expect(await collect(client.events("nobody-here"))).toEqual([]);
  });

  it("resumes from another process at the position this one read up to", async () => {
    const middle = lastAtPosition(Math.floor(all.length / 3));
    const elsewhere = await eventsFromAnotherProcess("client-1", all[middle]!.position + 1);
    expect(elsewhere).toEqual(all.slice(middle + 1));
    // And back: this process resumes after what the other one printed last (nothing more stored).
    expect(await collect(client.events("client-1", { fromSeq: elsewhere.at(-1)!.position + 1 }))).toEqual([]);
    expect(await eventsFromAnotherProcess("client-1", all.at(-1)!.position + 1)).toEqual([]);
  });

  it("with follow goes on with live events until the signal aborts", async () => {
    const before = await collect(client.events("client-1"));
    const stop = new AbortController();
    const live: SessionEvent[] = [];
    const reading = (async () => {
      for await (const item of client.events("client-1", {
        fromSeq: before.at(-1)!.position + 1,
        follow: true,
        signal: stop.signal,
      })) {
        live.push(item);
        if (item.event.kind === "TURN_COMPLETED") stop.abort();
      }
    })();
    const result = await client.submit("client-1", "a third message").result;
    await reading;
    expect(live[0]?.event).toMatchObject({ kind: "TURN_STARTED", turn_id: result.turnId, seq: 0 });
    expect(live.at(-1)?.event).toMatchObject({ kind: "TURN_COMPLETED", turn_id: result.turnId });
    expect(live.map(({ event }) => event.seq)).toEqual(live.map((_, index) => index));
    expect(live.every(({ position }) => position > before.at(-1)!.position)).toBe(true);
  });
});

describe("connect", () => {
  it("connects from servers and a login, and keeps reconnecting once connected (reconnectAttempts -1)", async () => {
    const own = await connect({ servers: [nats.url], user: "client", password: "conclave-dev-client", name: "mine" });
    try {
      // The connection's own options: what connect() handed to connectBus.
      const { options } = own.nc as unknown as { options: Record<string, unknown> };
      expect(options).toMatchObject({ servers: [nats.url], user: "client", name: "mine", maxReconnectAttempts: -1 });
      expect(await own.turns("nobody-here")).toEqual([]);
    } finally {
      await own.close();
    }
  });

  it("passes TLS, nkey and creds files through to the connection", async () => {
    await expect(connect({ servers: nats.url, nkeySeedFile: "/no/such/seed" })).rejects.toThrow(
      /cannot read the nkey seed file/,
    );
    await expect(connect({ servers: nats.url, credsFile: "/no/such.creds" })).rejects.toThrow(
      /cannot read the creds file/,
    );
    // TLS required by this side: the test server has none.
    await expect(connect({ servers: nats.url, tls: {} })).rejects.toThrow(/tls/i);
  });
});

describe("status and turns", () => {
  it("read where each turn stands from the turn status store", async () => {
    expect(await client.status("client-2", 1)).toMatchObject({
      session_id: "client-2",
      turn_id: 1,
      status: "done",
      outcome: expect.stringMatching(/^(Complete|PartialSuccess)$/),
      attempts: 1,
    });
    expect(await client.status("client-2", 99)).toBeNull();
    // The last turn's `done` is written just after its TURN_COMPLETED, which the previous test stopped at.
    const turns = await eventually(
      () => client.turns("client-1"),
      (all) => all.every(({ status }) => status === "done"),
    );
    expect(turns.map(({ turn_id, status }) => [turn_id, status])).toEqual([
      [1, "done"],
      [2, "done"],
      [3, "done"],
    ]);
    expect(await client.turns("nobody-here")).toEqual([]);
  });
});
