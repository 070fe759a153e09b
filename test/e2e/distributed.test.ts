import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import { connect } from "@nats-io/transport-node";
import { beforeAll, describe, expect, it } from "vitest";
import { CONCLAVE_BIN, type ConclaveProcess } from "../../src/cli/childProcess.ts";
import { submitTurn, watchTurn } from "../../src/client/turns.ts";
import type { EngineEvent } from "../../src/contracts/events.ts";
import { STAGES } from "../../src/contracts/turn.ts";
import { readEvents } from "../../src/eventlog/reader.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";
import { stagesOf } from "../helpers/turns.ts";

const nats = useNatsServer();
const processes = useConclaveProcesses(() => nats.url);
const run = promisify(execFile);
let runner: ConclaveProcess;
let reader: NatsConnection;

beforeAll(async () => {
  reader = await nats.connect("client");
  await Promise.all([
    processes.spawn("agents-a", ["worker", "--agents", "inhibition.*,monitoring.*,reasoning.*"]),
    processes.spawn("agents-b", ["worker", "--agents", "emotion.*,social.*,planning.*"]),
    processes.spawn("core", ["worker", "--services", "scheduler,council,critics,memory"]),
  ]);
  runner = await processes.spawn("runner", ["runner"]);
});

/** Each stream's text, its chunks joined in order: what a reader of the turn shows. */
function textByStream(events: EngineEvent[]): Record<string, string> {
  const text: Record<string, string> = {};
  for (const event of events)
    if (event.kind === "STREAM_CHUNK")
      text[event.payload.stream_id] = (text[event.payload.stream_id] ?? "") + event.payload.delta;
  return text;
}

async function turn(session: string, text: string): Promise<EngineEvent[]> {
  const nc = await nats.connect("client");
  const ack = await submitTurn(nc, session, { text });
  const events: EngineEvent[] = [];
  await watchTurn(nc, ack, (event) => events.push(event), 20_000);
  return events;
}

describe("a turn across worker processes", () => {
  it("runs all stages with agents answering from two other processes", async () => {
    const events = await turn("e2e", "I'm feeling stressed and overwhelmed by my deadline");
    expect(stagesOf(events)).toEqual([...STAGES]);
    const workers = new Set(
      events.flatMap((event) => (event.kind === "AGENT_COMPLETED" ? [event.payload.worker] : [])),
    );
    expect(workers.size).toBe(2);
    for (const worker of workers) expect(worker.endsWith(`:${process.pid}`)).toBe(false);
    const completed = events.at(-1);
    expect(completed?.kind).toBe("TURN_COMPLETED");
    if (completed?.kind === "TURN_COMPLETED") {
      expect(completed.payload.outcome).toEqual({ status: "Complete" });
      expect(completed.payload.response.length).toBeGreaterThan(0);
    }
  });

  it("stores each turn's events once, in order, seq contiguous from 0", async () => {
    const live = await turn("e2e-log", "There's a bug in my code and I'm stuck. Can you help?");
    const events = await readEvents(jetstream(reader), await jetstreamManager(reader), "e2e-log", 1);
    expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index));
    // What the watch gave (every chunk live) holds the same text as the log (chunks stored coalesced).
    expect(textByStream(live)).toEqual(textByStream(events));
    expect(new Set(events.map((event) => event.turn_id))).toEqual(new Set([1]));
    for (let i = 1; i < events.length; i++)
      expect(events[i]!.ts_monotonic).toBeGreaterThanOrEqual(events[i - 1]!.ts_monotonic);
    const second = await turn("e2e-log", "Thanks, that helped");
    expect(second[0]?.turn_id).toBe(2);
    const retrieved = second.find((event) => event.kind === "MEMORY_RETRIEVED");
    // By reference: the turns whose episodes were given, not their text.
    expect(retrieved?.kind === "MEMORY_RETRIEVED" && retrieved.payload).toEqual({
      refs: { episodes: [1], facts: [], threads: [], procedures: [] },
    });
  });

  it("keeps numbering turns after the runner restarts", async () => {
    await turn("e2e-restart", "first");
    await turn("e2e-restart", "second");
    await runner.stop();
    runner = await processes.spawn("runner-2", ["runner"]);
    const third = await turn("e2e-restart", "third");
    expect(third[0]?.turn_id).toBe(3);
    expect(third.at(-1)?.kind).toBe("TURN_COMPLETED");
  });
});

/** docs/protocol.md: 32-bit FNV-1a of the id's UTF-8 bytes, written here as an outside client would. */
function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (const byte of Buffer.from(text, "utf8")) hash = Math.imul(hash ^ byte, 0x01000193) >>> 0;
  return hash;
}

describe("the public protocol, from a plain NATS client", () => {
  it("turns a published submission into the documented ordered events in JetStream", async () => {
    // Only the NATS library here: no Conclave code on the client side.
    const nc = await connect({ servers: nats.url, user: "client", pass: "conclave-dev-client" });
    try {
      nc.publish(
        "conclave.turn.submit.plain",
        JSON.stringify({ text: "Hello! Do you think you feel things?", user_id: "u-1" }),
      );
      // The log's stream count, from its first stream's description; the session's stream by the hash.
      const first = await (await jetstream(nc).jetstreamManager()).streams.info("CONCLAVE_EVENTS_0");
      const count = Number(first.config.description?.match(/^conclave event log stream 0 of (\d+)$/)?.[1]);
      expect(count).toBe(3);
      const stream = fnv1a("plain") % count;
      const consumer = await jetstream(nc).consumers.get(`CONCLAVE_EVENTS_${stream}`, {
        filter_subjects: `conclave.events.${stream}.plain.1`,
      });
      const messages = await consumer.consume();
      const events: Record<string, unknown>[] = [];
      const subjects: string[] = [];
      const timer = setTimeout(() => messages.stop(), 20_000);
      // docs/protocol.md, "Reading a turn's events": a message whose `v` is 2 is a batch of events.
      let batches = 0;
      for await (const msg of messages) {
        const stored = msg.json<Record<string, unknown> & { events?: Record<string, unknown>[] }>();
        const held = stored.v === 2 ? (stored.events ?? []) : [stored];
        if (stored.v === 2) batches += 1;
        events.push(...held);
        subjects.push(msg.subject);
        if (held.at(-1)?.kind === "TURN_COMPLETED") break;
      }
      expect(batches).toBeGreaterThan(0);
      clearTimeout(timer);
      expect(new Set(subjects)).toEqual(new Set([`conclave.events.${stream}.plain.1`]));
      expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index));
      for (const event of events) {
        expect(Object.keys(event).sort()).toEqual([
          "kind",
          "payload",
          "seq",
          "session_id",
          "ts_monotonic",
          "turn_id",
          "v",
        ]);
        // docs/protocol.md, "Format versions": the format this release stores.
        expect(event).toMatchObject({ session_id: "plain", turn_id: 1, v: 1 });
      }
      expect(events[0]).toMatchObject({
        kind: "TURN_STARTED",
        payload: { user_input: "Hello! Do you think you feel things?", user_id: "u-1" },
      });
      expect(events.at(-1)).toMatchObject({ kind: "TURN_COMPLETED", payload: { outcome: { status: "Complete" } } });
    } finally {
      await nc.close();
    }
  });

  it("answers a request with an ack naming the turn and its event subject", async () => {
    const nc = await connect({ servers: nats.url, user: "client", pass: "conclave-dev-client" });
    try {
      const reply = await nc.request("conclave.turn.submit.plain-ack", JSON.stringify({ text: "hi" }), {
        timeout: 5_000,
      });
      expect(reply.json()).toEqual({
        session_id: "plain-ack",
        turn_id: 1,
        events_subject: `conclave.events.${fnv1a("plain-ack") % 3}.plain-ack.1`,
        duplicate: false,
        admission: { state: "running" },
      });
    } finally {
      await nc.close();
    }
  });
});

describe("bad input", () => {
  const submitRaw = async (subject: string, body: string) => {
    const nc = await nats.connect("client");
    const reply = await nc.request(subject, body, { timeout: 5_000 });
    return {
      body: reply.json<{ error?: { code: string; message: string; issues?: string[] } }>(),
      status: reply.headers?.get("Nats-Service-Error-Code"),
    };
  };

  it.each([
    ["malformed JSON", "conclave.turn.submit.bad", "{not json", "bad_json", "400"],
    ["a wrong type", "conclave.turn.submit.bad", JSON.stringify({ text: 42 }), "invalid_request", "400"],
    ["empty text", "conclave.turn.submit.bad", JSON.stringify({ text: "   " }), "invalid_request", "400"],
    [
      "text over the limit",
      "conclave.turn.submit.bad",
      JSON.stringify({ text: "x".repeat(16_001) }),
      "invalid_request",
      "400",
    ],
    [
      "a session id that is too long",
      `conclave.turn.submit.${"s".repeat(65)}`,
      JSON.stringify({ text: "hi" }),
      "invalid_request",
      "400",
    ],
  ])("rejects %s with a clear error reply", async (_what, subject, body, code, status) => {
    const reply = await submitRaw(subject, body);
    expect(reply.body.error?.code).toBe(code);
    expect(reply.body.error?.message.length).toBeGreaterThan(10);
    expect(reply.status).toBe(status);
  });

  it("names the failing field", async () => {
    const reply = await submitRaw("conclave.turn.submit.bad", JSON.stringify({ text: "hi", user_id: 7 }));
    expect(reply.body.error?.issues).toEqual([expect.stringMatching(/^user_id: /)]);
  });

  it("keeps the runner serving after bad input", async () => {
    expect(runner.child.exitCode).toBeNull();
    const events = await turn("after-bad", "still there?");
    expect(events.at(-1)?.kind).toBe("TURN_COMPLETED");
  });
});

describe("the conclave CLI", () => {
  const cli = (args: string[]) =>
    run(process.execPath, [CONCLAVE_BIN, ...args], { env: { ...process.env, CONCLAVE_NATS_URL: nats.url } }).then(
      (result) => ({ code: 0, ...result }),
      (error: { code: number; stdout: string; stderr: string }) => error,
    );

  it("send streams a turn's events as JSON lines, and events reads the same back", async () => {
    const sent = await cli(["send", "--session", "cli", "--json", "I'm happy, I finally finished!"]);
    expect(sent.code).toBe(0);
    const streamed = sent.stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as EngineEvent);
    expect(streamed.at(-1)?.kind).toBe("TURN_COMPLETED");
    const read = await cli(["events", "--session", "cli", "--turn", "1", "--json"]);
    expect(read.code).toBe(0);
    const stored = read.stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as EngineEvent);
    // `send` streams every chunk live; the log stores them coalesced: the same events, and the same text.
    const notChunks = (events: EngineEvent[]) => events.filter((event) => event.kind !== "STREAM_CHUNK");
    expect(notChunks(stored)).toEqual(notChunks(streamed));
    expect(textByStream(stored)).toEqual(textByStream(streamed));
    expect(stored.map((event) => event.seq)).toEqual(stored.map((_, index) => index));
  });

  it("send shows stages and the reply in readable form", async () => {
    const sent = await cli(["send", "--session", "cli-human", "Can you help? There's a bug."]);
    expect(sent.code).toBe(0);
    for (const stage of STAGES) expect(sent.stdout).toContain(`▸ ${stage}`);
    expect(sent.stdout).toMatch(/reply: \S+/);
  });

  it("exits 2 with a message for a bad session id", async () => {
    const sent = await cli(["send", "--session", "no spaces allowed", "hi"]);
    expect(sent.code).toBe(2);
    expect(sent.stderr).toMatch(/session_id must be/);
  });
});
