/**
 * How a runner ends a turn it no longer holds: a runner taken for dead goes on beside the one that took
 * its turn over, and its crash must not overwrite the end that runner settled.
 */
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { beforeAll, describe, expect, it } from "vitest";
import { usageSummary } from "../../src/contracts/turnProtocol.ts";
import { DEFAULT_EVENT_STREAMS, ensureEventStreams } from "../../src/eventlog/eventStreams.ts";
import { readEvents } from "../../src/eventlog/reader.ts";
import { ensureDeadLetterStream } from "../../src/eventlog/streams.ts";
import { TurnStatusStore } from "../../src/eventlog/turnStatusStore.ts";
import { ensureTurnWal } from "../../src/eventlog/turnWal.ts";
import { EventLogWriter } from "../../src/eventlog/writer.ts";
import type { SuspensionTimers } from "../../src/runtime/recipeHost/suspensionTimers.ts";
import { SessionHost } from "../../src/runtime/runner/sessionHost.ts";
import { TurnSettlement } from "../../src/runtime/runner/settlement.ts";
import { TurnEnds } from "../../src/runtime/runner/turnEnds.ts";
import { TurnOrder } from "../../src/runtime/runner/turnOrder.ts";
import { SessionStore } from "../../src/runtime/sessionStore.ts";
import { silentLogger } from "../../src/telemetry/log.ts";
import { useNatsServer } from "../helpers/nats.ts";

const nats = useNatsServer();

beforeAll(async () => {
  const jsm = await jetstreamManager(await nats.connect("runner"));
  await Promise.all([ensureTurnWal(jsm), ensureDeadLetterStream(jsm), ensureEventStreams(jsm)]);
});

describe("a turn's end on a runner that lost it", () => {
  it("leaves the taker's end standing when the turn crashes on the runner it was taken from", async () => {
    const nc = await nats.connect("runner");
    const js = jetstream(nc);
    const jsm = await jetstreamManager(nc);
    const [statuses, store] = await Promise.all([TurnStatusStore.open(nc), SessionStore.open(nc)]);
    await statuses.pending("lost", 1, Date.now());
    const writer = new EventLogWriter(js, DEFAULT_EVENT_STREAMS);
    const ends = new TurnEnds({
      statuses,
      writer,
      sessions: new SessionHost(
        () => {
          throw new Error("no session actor is started here");
        },
        store,
        silentLogger,
      ),
      settlement: new TurnSettlement({ js, statuses, sessions: store, log: silentLogger }),
      order: new TurnOrder({ store, statuses, log: silentLogger, walTurnIds: async () => [] }),
      log: silentLogger,
      checkpointEvery: 10,
      timers: {} as SuspensionTimers, // a suspension is not what this test ends
      admission: { release: () => {} },
    });
    writer.append("lost", 1, { kind: "TURN_STARTED", payload: { user_input: "hi", turn_id: 1 } });
    await writer.flushed("lost", 1);

    // The taker reads the log, runs the turn to its end and settles it.
    let lastStreamSeq = 0;
    const stored = await readEvents(js, jsm, "lost", 1, { onStreamSeq: (seq) => (lastStreamSeq = seq) });
    const taker = new EventLogWriter(js, DEFAULT_EVENT_STREAMS);
    taker.open("lost", 1, stored, lastStreamSeq);
    taker.append("lost", 1, { kind: "TURN_RESUMED", payload: { attempt: 2, after_seq: 0 } });
    taker.append("lost", 1, {
      kind: "TURN_COMPLETED",
      payload: { response: "done", outcome: { status: "Complete" }, usage: usageSummary({}) },
    });
    await taker.finish("lost", 1);
    await statuses.finish("lost", 1, "done", { outcome: "Complete" });

    // The first runner goes on: its next event meets the taker's, and a step that waits on it fails the turn.
    writer.append("lost", 1, { kind: "TURN_STAGE_CHANGED", payload: { stage: "ingest" } });
    await expect(writer.flushed("lost", 1)).rejects.toThrow(/another runner/);
    expect(writer.isFenced("lost", 1)).toBe(true);
    await ends.crashed("lost", 1, new Error("a durable step's events were not stored"));

    expect(await statuses.get("lost", 1)).toMatchObject({ status: "done", outcome: "Complete" });
  });
});
