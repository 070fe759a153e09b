import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { headers } from "@nats-io/nats-core";
import { describe, expect, it } from "vitest";
import { eventStream, eventStreamOf, LEGACY_EVENT_STREAM, subjects } from "../../src/bus/subjects.ts";
import { usageSummary } from "../../src/contracts/turnProtocol.ts";
import { ensureEventStreams, eventStreamCount } from "../../src/eventlog/eventStreams.ts";
import { migrateEvents } from "../../src/eventlog/migrateEvents.ts";
import { readEvents } from "../../src/eventlog/reader.ts";
import { EventLogWriter } from "../../src/eventlog/writer.ts";
import { runConclave } from "../helpers/cli.ts";
import { useNatsServer } from "../helpers/nats.ts";

const nats = useNatsServer();
/** The migration's own server: its log starts as a 0.1 runner left it (0.1's runner role could create it). */
const legacyNats = useNatsServer({
  editConfig: (config) =>
    config.replace(
      '"$JS.API.STREAM.INFO.CONCLAVE_EVENTS",',
      '"$JS.API.STREAM.INFO.CONCLAVE_EVENTS", "$JS.API.STREAM.CREATE.CONCLAVE_EVENTS",',
    ),
});
const encoder = new TextEncoder();

/** What a 0.1 runner stored: one stream, `conclave.events.<session>.<turn>`, ids `<session>.<turn>.<seq>`. */
async function makeLegacyLog(sessions: string[], turns: number, eventsPerTurn: number): Promise<number> {
  const nc = await legacyNats.connect("runner");
  const jsm = await jetstreamManager(nc);
  await jsm.streams.add({ name: LEGACY_EVENT_STREAM, subjects: ["conclave.events.>"] });
  const js = jetstream(nc);
  let stored = 0;
  for (let turn = 1; turn <= turns; turn++)
    for (const session of sessions) {
      for (let seq = 0; seq < eventsPerTurn; seq++) {
        const event = { session_id: session, turn_id: turn, seq, ts_monotonic: seq };
        const payload =
          seq === 0
            ? { ...event, kind: "TURN_STARTED", payload: { user_input: "hi", turn_id: turn } }
            : { ...event, kind: "TURN_STAGE_CHANGED", payload: { stage: "ingest" } };
        const hdrs = headers();
        hdrs.set("Nats-Msg-Id", `${session}.${turn}.${seq}`);
        await js.publish(`conclave.events.${session}.${turn}`, encoder.encode(JSON.stringify(payload)), {
          headers: hdrs,
        });
        stored += 1;
      }
      await js.publish(`conclave.events.${session}.ledger.entries`, encoder.encode(JSON.stringify({ turn })));
      stored += 1;
    }
  return stored;
}

describe("the event log's streams", () => {
  it("puts each session's events in the stream of its partition, and reads them from there alone", async () => {
    const nc = await nats.connect("runner");
    const jsm = await jetstreamManager(nc);
    expect(await ensureEventStreams(jsm, 4)).toBe(4);
    const refused = await ensureEventStreams(jsm, 2).catch((error: unknown) => error);
    expect(refused).toMatchObject({ code: "config" });
    expect(String(refused)).toMatch(/has 4 streams.*2 cannot/);
    // Another process finds the count from the streams themselves.
    expect(await eventStreamCount(await nats.connect("client"))).toBe(4);

    const writer = new EventLogWriter(jetstream(nc), 4);
    const sessions = Array.from({ length: 24 }, (_, i) => `spread-${i}`);
    for (const session of sessions) {
      writer.open(session, 1, [], 0);
      writer.append(session, 1, { kind: "TURN_STARTED", payload: { user_input: "hi", turn_id: 1 } });
      writer.append(session, 1, {
        kind: "TURN_COMPLETED",
        payload: { response: "ok", outcome: { status: "Complete" }, usage: usageSummary({}) },
      });
      await writer.finish(session, 1);
    }
    const used = new Set<string>();
    for (const session of sessions) {
      const mine = eventStreamOf(session, 4);
      used.add(mine);
      for (let index = 0; index < 4; index++) {
        const info = await jsm.streams.info(eventStream(index), { subjects_filter: subjects.sessionLog(session, 4) });
        // The session's filter names its stream's index, so other streams never hold it.
        expect(info.state.subjects ? Object.values(info.state.subjects).reduce((a, b) => a + b, 0) : 0).toBe(
          eventStream(index) === mine ? 2 : 0,
        );
      }
      const events = await readEvents(jetstream(nc), jsm, session);
      expect(events.map((event) => event.kind)).toEqual(["TURN_STARTED", "TURN_COMPLETED"]);
    }
    // 24 sessions over 4 streams: every stream gets some.
    expect(used.size).toBe(4);
  });
});

describe("conclave migrate events", () => {
  it("moves a one-stream log over, in order, and goes on after an interruption", async () => {
    const sessions = ["old-a", "old-b", "old-c", "old-d", "old-e"];
    const stored = await makeLegacyLog(sessions, 2, 5);
    const nc = await legacyNats.connect("runner");
    const jsm = await jetstreamManager(nc);

    // A runner refuses to start on it, naming the command.
    const refused = await ensureEventStreams(jsm).catch((error: unknown) => error);
    expect(refused).toMatchObject({ code: "config" });
    expect(String(refused)).toContain("conclave migrate events");

    // Interrupted after 20 copies (the progress report throws): the old stream is kept.
    const interrupted = await migrateEvents(jetstream(nc), jsm, {
      streams: 3,
      every: 20,
      onProgress: () => {
        throw new Error("interrupted");
      },
    }).catch((error: unknown) => error);
    expect(String(interrupted)).toContain("interrupted");
    expect((await jsm.streams.info(LEGACY_EVENT_STREAM)).state.messages).toBe(stored);

    // Run again as a user would: it goes on, copies each message once, and deletes the old stream.
    const run = await runConclave(legacyNats.url, ["migrate", "events"]);
    expect(run.stderr).toContain(`of ${stored} messages`);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(`moved the event log over to 3 streams: ${stored - 20} messages copied`);
    const left = await jsm.streams.info(LEGACY_EVENT_STREAM).catch((error: unknown) => error);
    expect(String(left)).toMatch(/stream not found/);
    let total = 0;
    for (let index = 0; index < 3; index++) total += (await jsm.streams.info(eventStream(index))).state.messages;
    expect(total).toBe(stored);

    // Each session's turns read back whole and in order from its new stream.
    for (const session of sessions) {
      const events = await readEvents(jetstream(nc), jsm, session);
      expect(events.map((event) => `${event.turn_id}.${event.seq}`)).toEqual(
        [1, 2].flatMap((turn) => [0, 1, 2, 3, 4].map((seq) => `${turn}.${seq}`)),
      );
      const ledger = await jsm.streams.getMessage(eventStreamOf(session, 3), {
        last_by_subj: subjects.ledgerEvents(session, 3),
      });
      expect(ledger?.json()).toEqual({ turn: 2 });
    }
    // The log is usable now, and a second run has nothing to do.
    expect(await ensureEventStreams(jsm)).toBe(3);
    const again = await runConclave(legacyNats.url, ["migrate", "events"]);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain("nothing to migrate");
  });
});
