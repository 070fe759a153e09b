import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { subjects } from "../../src/bus/subjects.ts";
import { type ConclaveClient, connect } from "../../src/client/index.ts";
import { EVENT_KINDS, type EventKind, EventPayloads, LiveChunk } from "../../src/contracts/events.ts";
import { usageSummary } from "../../src/contracts/turnProtocol.ts";
import { DEFAULT_EVENT_STREAMS } from "../../src/eventlog/eventStreams.ts";
import {
  EVENT_KIND_LEVELS,
  EVENT_LEVELS,
  eventLevelFromEnv,
  levelOf,
  recordedKinds,
} from "../../src/eventlog/levels.ts";
import { readEvents } from "../../src/eventlog/reader.ts";
import { EventLogWriter } from "../../src/eventlog/writer.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { useInProcessStack } from "../helpers/stack.ts";
import { waitForMessage } from "../helpers/wait.ts";

/** The event log's stream count a runner makes by default. */
const EVENT_STREAMS = DEFAULT_EVENT_STREAMS;

describe("event levels", () => {
  it("gives every event kind a level, and each level records the levels below it", () => {
    for (const kind of Object.keys(EventPayloads) as EventKind[]) expect(EVENT_LEVELS).toContain(levelOf(kind));
    expect(Object.keys(EVENT_KIND_LEVELS).sort()).toEqual([...EVENT_KINDS].sort());
    const [audit, ops, debug] = EVENT_LEVELS.map((level) => recordedKinds(level));
    expect([...debug!].sort()).toEqual([...EVENT_KINDS].sort()); // debug: everything
    // ops: everything recorded before levels existed; debug adds the steps' timings.
    expect([...debug!].filter((kind) => !ops!.has(kind))).toEqual(["STEP_TIMED"]);
    for (const kind of audit!) expect(ops!.has(kind)).toBe(true);
    // What takeover, replay and verify read is audit.
    for (const kind of [
      "TURN_STARTED",
      "TURN_RESUMED",
      "TURN_COMPLETED",
      "SENSORS_FAST_UPDATED",
      "STANCE_UPDATED",
      "AGENT_COMPLETED",
      "COUNCIL_DECISION_MADE",
      "VOICE_RENDERED",
      "CRITICS_UPDATED",
      "MEMORY_COMMITTED",
      "MODEL_CALL_COMPLETED",
      "TOOL_CALL_FINISHED",
      "NODE_STARTED",
      "TURN_SUSPENDED",
      "HUMAN_INPUT_RECEIVED",
    ] as const)
      expect(audit!.has(kind)).toBe(true);
    expect(audit!.has("STREAM_CHUNK")).toBe(false);
    expect(audit!.has("TURN_STAGE_CHANGED")).toBe(false);
  });

  it("reads CONCLAVE_EVENT_LEVEL, ops by default, and refuses a bad one in one line", () => {
    expect(eventLevelFromEnv({})).toBe("ops");
    expect(eventLevelFromEnv({ CONCLAVE_EVENT_LEVEL: "AUDIT" })).toBe("audit");
    expect(() => eventLevelFromEnv({ CONCLAVE_EVENT_LEVEL: "verbose" })).toThrow(
      /CONCLAVE_EVENT_LEVEL.*audit, ops, debug/,
    );
  });
});

// Two stacks, one recording at ops (the default) and one at audit, each on its own nats-server.
const opsNats = useNatsServer();
useInProcessStack(opsNats);
const auditNats = useNatsServer();
beforeAll(() => {
  vi.stubEnv("CONCLAVE_EVENT_LEVEL", "audit"); // read by the runner's log writer as it starts
});
useInProcessStack(auditNats);
const debugNats = useNatsServer();
beforeAll(() => {
  vi.stubEnv("CONCLAVE_EVENT_LEVEL", "debug");
});
useInProcessStack(debugNats);
beforeAll(() => {
  vi.unstubAllEnvs();
});

let opsClient: ConclaveClient;
let auditClient: ConclaveClient;
let debugClient: ConclaveClient;
beforeAll(async () => {
  opsClient = await connect({ nc: await opsNats.connect("client") });
  auditClient = await connect({ nc: await auditNats.connect("client") });
  debugClient = await connect({ nc: await debugNats.connect("client") });
});
afterAll(() => vi.unstubAllEnvs());

describe("a runner at level audit", () => {
  it("completes the same turn with the same response, and stores only audit kinds, seqs contiguous", async () => {
    const text = "I'm worried about my deadline tomorrow, can you help me plan?";
    const ops = await opsClient.submit("levels", text).result;
    const audit = await auditClient.submit("levels", text).result;
    expect(audit.outcome.status).toBe(ops.outcome.status);
    expect(audit.response).toBe(ops.response);
    expect(audit.response.length).toBeGreaterThan(0);

    const kindsOf = async (client: ConclaveClient) => {
      const kinds: EventKind[] = [];
      for await (const { event } of client.events("levels")) kinds.push(event.kind);
      return kinds;
    };
    const opsKinds = await kindsOf(opsClient);
    const auditKinds = await kindsOf(auditClient);
    expect(opsKinds).toContain("STREAM_CHUNK");
    expect(opsKinds).toContain("TURN_STAGE_CHANGED");
    expect(auditKinds.length).toBeLessThan(opsKinds.length);
    expect(auditKinds.filter((kind) => levelOf(kind) !== "audit")).toEqual([]);
    // What the audit log keeps is what the ops log has of those kinds, in the same order.
    expect(auditKinds).toEqual(opsKinds.filter((kind) => levelOf(kind) === "audit"));
    // The thinner log still verifies: every turn's seqs are contiguous, with its terminal event.
    const report = await auditClient.verify("levels", "quick");
    expect(report.checks.find((check) => check.name === "log_contiguity")?.ok).toBe(true);
  }, 60_000);
});

describe("a runner at level debug", () => {
  it("records every step of the turn timed, and otherwise what ops records", async () => {
    const text = "I'm worried about my deadline tomorrow, can you help me plan?";
    const debug = await debugClient.submit("levels-debug", text).result;
    const ops = await opsClient.submit("levels-debug", text).result;
    expect(debug.response).toBe(ops.response);
    const eventsOf = async (client: ConclaveClient) => {
      const events = [];
      for await (const { event } of client.events("levels-debug")) events.push(event);
      return events;
    };
    const debugEvents = await eventsOf(debugClient);
    const opsEvents = await eventsOf(opsClient);
    expect(opsEvents.some((event) => event.kind === "STEP_TIMED")).toBe(false);
    // Without its timings, the debug log is the ops log, kind for kind.
    expect(debugEvents.filter((event) => event.kind !== "STEP_TIMED").map((event) => event.kind)).toEqual(
      opsEvents.map((event) => event.kind),
    );
    const timings = debugEvents.flatMap((event) => (event.kind === "STEP_TIMED" ? [event.payload] : []));
    const steps = new Set(timings.map((timing) => timing.step));
    for (const step of ["screen", "retrieveMemory", "planWaves", "callAgent", "decide", "renderVoice", "runCritics"])
      expect(steps).toContain(step);
    expect(steps).toContain("commitMemory");
    // One timing per agent asked, each before that agent's answer is recorded.
    const answered = debugEvents.flatMap((event) =>
      event.kind === "AGENT_COMPLETED" || event.kind === "AGENT_FAILED" ? [event] : [],
    );
    const agentTimings = debugEvents.filter(
      (event) => event.kind === "STEP_TIMED" && event.payload.step === "callAgent",
    );
    expect(agentTimings).toHaveLength(answered.length);
    for (const reply of answered) {
      const timing = agentTimings.find(
        (event) => event.kind === "STEP_TIMED" && event.payload.agent_id === reply.payload.agent_id,
      );
      expect(timing?.seq).toBeLessThan(reply.seq);
    }
    for (const timing of timings) {
      expect(timing.ok).toBe(true);
      expect(timing.elapsed_ms).toBeGreaterThanOrEqual(0);
    }
  }, 60_000);
});

describe("a log writer at level audit", () => {
  it("drops the kinds above it before they get a seq, and still sends stream chunks live", async () => {
    const nc = await auditNats.connect("runner");
    const observer = await auditNats.connect("observer");
    const live = observer.subscribe(subjects.liveChunks("writer-audit", 1));
    await observer.flush(); // subscribed before the first chunk goes out
    const writer = new EventLogWriter(jetstream(nc), EVENT_STREAMS, {
      level: "audit",
      live: nc,
    });
    writer.append("writer-audit", 1, { kind: "TURN_STARTED", payload: { user_input: "hi", turn_id: 1 } });
    writer.append("writer-audit", 1, { kind: "TURN_STAGE_CHANGED", payload: { stage: "ingest" } });
    writer.append("writer-audit", 1, {
      kind: "STREAM_START",
      payload: { stream_id: "voice", content_type: "text/plain", attempt: 1 },
    });
    writer.append("writer-audit", 1, { kind: "STREAM_CHUNK", payload: { stream_id: "voice", index: 0, delta: "hel" } });
    writer.append("writer-audit", 1, { kind: "STREAM_CHUNK", payload: { stream_id: "voice", index: 1, delta: "lo" } });
    writer.append("writer-audit", 1, { kind: "STREAM_END", payload: { stream_id: "voice", chunks: 2 } });
    writer.append("writer-audit", 1, {
      kind: "TURN_COMPLETED",
      payload: { response: "hello", outcome: { status: "Complete" }, usage: usageSummary({}) },
    });
    expect(await writer.finish("writer-audit", 1)).toBe(4);
    const stored = await readEvents(jetstream(nc), await jetstreamManager(nc), "writer-audit", 1);
    expect(stored.map((event) => `${event.seq}:${event.kind}`)).toEqual([
      "0:TURN_STARTED",
      "1:STREAM_START",
      "2:STREAM_END",
      "3:TURN_COMPLETED",
    ]);
    // Live, each chunk names the stored event after it (STREAM_END, seq 2): readers merge it after STREAM_START.
    const chunk = await waitForMessage(live, (data) => LiveChunk.parse(data), { match: (c) => c.payload.index === 1 });
    expect(chunk).toMatchObject({ seq: 2, after_seq: 1, payload: { delta: "lo" } });
  });
});
