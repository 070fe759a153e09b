import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { describe, expect, it } from "vitest";
import { encodeJson } from "../../src/bus/codec.ts";
import { subjects } from "../../src/bus/subjects.ts";
import { submitTurn } from "../../src/client/turns.ts";
import type { EngineEvent } from "../../src/contracts/events.ts";
import { eventStreamCount } from "../../src/eventlog/eventStreams.ts";
import { readEvents } from "../../src/eventlog/reader.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { useInProcessStack } from "../helpers/stack.ts";
import { settledStatus } from "../helpers/turnStatus.ts";

const nats = useNatsServer();
useInProcessStack(nats);

describe("a turn whose events could not be stored", () => {
  it("is taken again and completes once, never left inflight with nobody working on it", async () => {
    // Another writer already stored an event of turn 1: the runner's first event is refused (single-writer
    // fencing), nothing of its attempt is stored, and its `finish` fails. The entry goes back to the WAL and
    // is delivered to the same runner, whose session actor has already counted turn 1 as run.
    const session = "unsettled";
    const nc = await nats.connect("runner");
    const foreign: EngineEvent = {
      session_id: session,
      turn_id: 1,
      seq: 0,
      ts_monotonic: 1,
      kind: "TURN_STAGE_CHANGED",
      payload: { stage: "ingest" },
    };
    await jetstream(nc).publish(subjects.turnEvents(session, 1, await eventStreamCount(nc)), encodeJson(foreign));

    const ack = await submitTurn(await nats.connect("client"), session, { text: "I'm stressed about my deadline" });
    expect(ack.turn_id).toBe(1);

    const status = await settledStatus(nc, session, 1);
    expect(status.status).toBe("done");
    // Taken back by the runner that let it go: its own attempt going on, not a new one (never towards poison).
    expect(status.attempts).toBe(1);

    const events = await readEvents(jetstream(nc), await jetstreamManager(nc), session, 1);
    expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index));
    expect(events.filter((event) => event.kind === "TURN_COMPLETED")).toHaveLength(1);
    expect(events.at(-1)?.kind).toBe("TURN_COMPLETED");
    const resumed = events.find((event) => event.kind === "TURN_RESUMED");
    expect(resumed?.payload).toMatchObject({ after_seq: 0 });
  });
});
