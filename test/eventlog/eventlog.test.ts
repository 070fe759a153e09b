import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { beforeAll, describe, expect, it } from "vitest";
import { encodeJson, encodeRecord } from "../../src/bus/codec.ts";
import { eventStream, subjects } from "../../src/bus/subjects.ts";
import { usageSummary } from "../../src/contracts/turnProtocol.ts";
import { DEFAULT_EVENT_STREAMS, ensureEventStreams } from "../../src/eventlog/eventStreams.ts";
import { readEvents } from "../../src/eventlog/reader.ts";
import { EventLogWriter } from "../../src/eventlog/writer.ts";
import { SessionStore } from "../../src/runtime/sessionStore.ts";
import { useNatsServer } from "../helpers/nats.ts";

/** The event log's stream count a runner makes by default. */
const EVENT_STREAMS = DEFAULT_EVENT_STREAMS;

const nats = useNatsServer();

beforeAll(async () => {
  await ensureEventStreams(await jetstreamManager(await nats.connect("runner")));
});

describe("event log writer", () => {
  it("stores a turn's events in order with seq contiguous from 0, and total time on completion", async () => {
    const nc = await nats.connect("runner");
    const writer = new EventLogWriter(jetstream(nc), EVENT_STREAMS);
    writer.append("log", 1, { kind: "TURN_STARTED", payload: { user_input: "hi", turn_id: 1 } });
    for (const stage of ["ingest", "sensing_fast", "context"] as const)
      writer.append("log", 1, { kind: "TURN_STAGE_CHANGED", payload: { stage } });
    writer.append("log", 1, {
      kind: "TURN_COMPLETED",
      payload: { response: "hello", outcome: { status: "Complete" }, usage: usageSummary({}) },
    });
    expect(await writer.finish("log", 1)).toBe(5);
    const events = await readEvents(jetstream(nc), await jetstreamManager(nc), "log", 1);
    expect(events.map((event) => [event.seq, event.kind])).toEqual([
      [0, "TURN_STARTED"],
      [1, "TURN_STAGE_CHANGED"],
      [2, "TURN_STAGE_CHANGED"],
      [3, "TURN_STAGE_CHANGED"],
      [4, "TURN_COMPLETED"],
    ]);
    const last = events[4];
    expect(last?.kind === "TURN_COMPLETED" && last.payload.total_time_ms).toBeGreaterThanOrEqual(0);
  });

  it("stores a republished event once (msgID dedup)", async () => {
    const nc = await nats.connect("runner");
    const js = jetstream(nc);
    const event = {
      session_id: "dup",
      turn_id: 1,
      seq: 0,
      ts_monotonic: 1,
      kind: "TURN_STAGE_CHANGED",
      payload: { stage: "ingest" },
    };
    const first = await js.publish(subjects.turnEvents("dup", 1, EVENT_STREAMS), encodeJson(event), {
      msgID: "dup.1.0",
    });
    const again = await js.publish(subjects.turnEvents("dup", 1, EVENT_STREAMS), encodeJson(event), {
      msgID: "dup.1.0",
    });
    expect(again.duplicate).toBe(true);
    expect(again.seq).toBe(first.seq);
    expect(await readEvents(js, await jetstreamManager(nc), "dup", 1)).toHaveLength(1);
  });

  it("reads a session's turns back in log order, and nothing for an unknown session", async () => {
    const nc = await nats.connect("runner");
    const writer = new EventLogWriter(jetstream(nc), EVENT_STREAMS);
    for (const turn of [1, 2]) {
      writer.append("multi", turn, { kind: "TURN_STARTED", payload: { user_input: `t${turn}`, turn_id: turn } });
      writer.append("multi", turn, {
        kind: "TURN_COMPLETED",
        payload: { response: "", outcome: { status: "Complete" }, usage: usageSummary({}) },
      });
      await writer.finish("multi", turn);
    }
    const events = await readEvents(jetstream(nc), await jetstreamManager(nc), "multi");
    expect(events.map((event) => `${event.turn_id}.${event.seq}`)).toEqual(["1.0", "1.1", "2.0", "2.1"]);
    expect(await readEvents(jetstream(nc), await jetstreamManager(nc), "nobody")).toEqual([]);
    for (let index = 0; index < EVENT_STREAMS; index++) {
      const info = await (await jetstreamManager(nc)).streams.info(eventStream(index));
      expect(info.config.subjects).toEqual([`conclave.events.${index}.>`]);
    }
  });
});

describe("session store", () => {
  it("hands out turn ids once each, even to concurrent callers, and remembers them", async () => {
    const [a, b] = await Promise.all([
      SessionStore.open(await nats.connect("runner")),
      SessionStore.open(await nats.connect("runner")),
    ]);
    const ids = await Promise.all(
      Array.from({ length: 20 }, (_, index) =>
        (index % 2 === 0 ? a : b).reserveTurnId("race").then(({ turnId }) => turnId),
      ),
    );
    expect(ids.sort((x, y) => x - y)).toEqual(Array.from({ length: 20 }, (_, index) => index + 1));
    const reopened = await SessionStore.open(await nats.connect("runner"));
    expect(await reopened.lastTurnId("race")).toBe(20);
    expect((await reopened.reserveTurnId("race")).turnId).toBe(21);
    expect(await reopened.lastTurnId("fresh")).toBe(0);
  });

  it("tells a runner whose copy of a session is stale that another runner's turn chose a pipeline", async () => {
    const [a, b] = await Promise.all([
      SessionStore.open(await nats.connect("runner")),
      SessionStore.open(await nats.connect("runner")),
    ]);
    expect(await a.pipeline("chooser")).toBeNull();
    expect(await a.reserveTurnId("chooser")).toEqual({ turnId: 1, sessionChosePipeline: false });
    await b.choosePipeline("chooser", { kind: "agents", council: true });
    expect(await b.reserveTurnId("chooser", { choosingPipeline: true })).toEqual({
      turnId: 2,
      sessionChosePipeline: true,
    });
    // a's copy of the counter predates the choice: its read says none, and its reservation says otherwise.
    expect(await a.pipeline("chooser")).toBeNull();
    expect(await a.reserveTurnId("chooser")).toEqual({ turnId: 3, sessionChosePipeline: true });
    expect(await a.pipeline("chooser")).toEqual({ kind: "agents", council: true });
  });
});

describe("event log reader", () => {
  it("skips a message that is not an event (and says so) instead of stopping", async () => {
    const nc = await nats.connect("runner");
    const js = jetstream(nc);
    const writer = new EventLogWriter(js, EVENT_STREAMS);
    writer.append("garbled", 1, { kind: "TURN_STARTED", payload: { user_input: "hi", turn_id: 1 } });
    await writer.finish("garbled", 1);
    const garbage = await js.publish(
      subjects.turnEvents("garbled", 1, EVENT_STREAMS),
      new TextEncoder().encode("{not an event"),
    );
    writer.open(
      "garbled",
      1,
      [
        {
          session_id: "garbled",
          turn_id: 1,
          seq: 0,
          ts_monotonic: 0,
          kind: "TURN_STAGE_CHANGED",
          payload: { stage: "ingest" },
        },
      ],
      garbage.seq,
    );
    writer.append("garbled", 1, {
      kind: "TURN_COMPLETED",
      payload: { response: "", outcome: { status: "Complete" }, usage: usageSummary({}) },
    });
    await writer.finish("garbled", 1);
    const invalid: string[] = [];
    const events = await readEvents(js, await jetstreamManager(nc), "garbled", 1, {
      onInvalid: (subject) => invalid.push(subject),
    });
    expect(events.map((event) => [event.seq, event.kind])).toEqual([
      [0, "TURN_STARTED"],
      [1, "TURN_COMPLETED"],
    ]);
    expect(invalid).toEqual([subjects.turnEvents("garbled", 1, EVENT_STREAMS)]);
  });
});

describe("single-writer fencing", () => {
  it("stops a second writer of the same turn: its first event meets the wrong last sequence", async () => {
    const nc = await nats.connect("runner");
    const js = jetstream(nc);
    const fenced: string[] = [];
    const first = new EventLogWriter(js, EVENT_STREAMS);
    const second = new EventLogWriter(js, EVENT_STREAMS, {
      onFenced: (session, turn) => fenced.push(`${session}.${turn}`),
    });
    first.append("fence", 1, { kind: "TURN_STARTED", payload: { user_input: "hi", turn_id: 1 } });
    await first.finish("fence", 1);
    // The second writer believes the turn is fresh (it expects no event on the subject yet).
    second.append("fence", 1, { kind: "TURN_STARTED", payload: { user_input: "hi", turn_id: 1 } });
    second.append("fence", 1, { kind: "TURN_STAGE_CHANGED", payload: { stage: "ingest" } });
    await expect(second.finish("fence", 1)).rejects.toThrow(/another runner/);
    expect(fenced).toEqual(["fence.1"]);
    const events = await readEvents(js, await jetstreamManager(nc), "fence", 1);
    expect(events.map((event) => event.seq)).toEqual([0]);
  });

  it("stops a runner taken for dead that goes on beside its taker: one TURN_COMPLETED is stored", async () => {
    const nc = await nats.connect("runner");
    const js = jetstream(nc);
    const jsm = await jetstreamManager(nc);
    const fenced: string[] = [];
    const completed = {
      kind: "TURN_COMPLETED" as const,
      payload: { response: "done", outcome: { status: "Complete" as const }, usage: usageSummary({}) },
    };
    const stalled = new EventLogWriter(js, EVENT_STREAMS, {
      onFenced: (session, turn) => fenced.push(`${session}.${turn}`),
    });
    stalled.append("beside", 1, { kind: "TURN_STARTED", payload: { user_input: "hi", turn_id: 1 } });
    await stalled.flushed("beside", 1);
    // Its taker reads what is stored and runs the turn to its end, with more events than the first writer will.
    let lastStreamSeq = 0;
    const stored = await readEvents(js, jsm, "beside", 1, { onStreamSeq: (seq) => (lastStreamSeq = seq) });
    const taker = new EventLogWriter(js, EVENT_STREAMS);
    taker.open("beside", 1, stored, lastStreamSeq);
    taker.append("beside", 1, { kind: "TURN_RESUMED", payload: { attempt: 2, after_seq: 0 } });
    taker.append("beside", 1, { kind: "TURN_STAGE_CHANGED", payload: { stage: "ingest" } });
    taker.append("beside", 1, { kind: "TURN_STAGE_CHANGED", payload: { stage: "context" } });
    taker.append("beside", 1, completed);
    await taker.finish("beside", 1);
    // The first writer wakes and goes on: its next seq is already stored by the taker.
    stalled.append("beside", 1, { kind: "TURN_STAGE_CHANGED", payload: { stage: "ingest" } });
    stalled.append("beside", 1, completed);
    await expect(stalled.finish("beside", 1)).rejects.toThrow(/another runner/);
    expect(fenced).toEqual(["beside.1"]);
    const kinds = (await readEvents(js, jsm, "beside", 1)).map((event) => event.kind);
    expect(kinds.filter((kind) => kind === "TURN_COMPLETED")).toHaveLength(1);
    expect(kinds).toEqual([
      "TURN_STARTED",
      "TURN_RESUMED",
      "TURN_STAGE_CHANGED",
      "TURN_STAGE_CHANGED",
      "TURN_COMPLETED",
    ]);
  });

  it("stops a writer whose turn another writer added to since its last event: its TURN_COMPLETED is refused", async () => {
    const nc = await nats.connect("runner");
    const js = jetstream(nc);
    const jsm = await jetstreamManager(nc);
    const first = new EventLogWriter(js, EVENT_STREAMS);
    first.append("terminal", 1, { kind: "TURN_STARTED", payload: { user_input: "hi", turn_id: 1 } });
    first.append("terminal", 1, { kind: "TURN_STAGE_CHANGED", payload: { stage: "ingest" } });
    await first.flushed("terminal", 1);
    // Another writer stores an event the first one never numbered (seq 5): no id of the first one meets it.
    await js.publish(
      subjects.turnEvents("terminal", 1, EVENT_STREAMS),
      encodeRecord({
        session_id: "terminal",
        turn_id: 1,
        seq: 5,
        ts_monotonic: 0,
        kind: "TURN_STAGE_CHANGED",
        payload: { stage: "context" },
      }),
      { msgID: "terminal.1.5" },
    );
    first.append("terminal", 1, {
      kind: "TURN_COMPLETED",
      payload: { response: "", outcome: { status: "Complete" }, usage: usageSummary({}) },
    });
    await expect(first.finish("terminal", 1)).rejects.toThrow(/another runner/);
    expect((await readEvents(js, jsm, "terminal", 1)).map((event) => event.kind)).not.toContain("TURN_COMPLETED");
  });

  it("lets a writer resuming a turn go on from where the log is", async () => {
    const nc = await nats.connect("runner");
    const js = jetstream(nc);
    const first = new EventLogWriter(js, EVENT_STREAMS);
    first.append("resume", 1, { kind: "TURN_STARTED", payload: { user_input: "hi", turn_id: 1 } });
    await first.finish("resume", 1);
    let lastStreamSeq = 0;
    const stored = await readEvents(js, await jetstreamManager(nc), "resume", 1, {
      onStreamSeq: (seq) => {
        lastStreamSeq = seq;
      },
    });
    const second = new EventLogWriter(js, EVENT_STREAMS);
    second.open("resume", 1, stored, lastStreamSeq);
    second.append("resume", 1, { kind: "TURN_STAGE_CHANGED", payload: { stage: "ingest" } });
    await second.finish("resume", 1);
    expect((await readEvents(js, await jetstreamManager(nc), "resume", 1)).map((event) => event.seq)).toEqual([0, 1]);
  });
});
