/**
 * Reading a turn back while its messages are deleted one by one (an erase or a trim's secure delete):
 * the read ends with what is left, rather than wait for ever for a message that says nothing is pending.
 * A trim racing `readEvents` hung this way.
 */
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { describe, expect, it } from "vitest";
import { encodeJson } from "../../src/bus/codec.ts";
import { eventStreamOf, subjects } from "../../src/bus/subjects.ts";
import { withDeadline } from "../../src/deadline.ts";
import { secureErase } from "../../src/eventlog/eraseSecure.ts";
import { DEFAULT_EVENT_STREAMS, ensureEventStreams } from "../../src/eventlog/eventStreams.ts";
import { readEvents } from "../../src/eventlog/reader.ts";
import { silentLogger } from "../../src/telemetry/log.ts";
import { useNatsServer } from "../helpers/nats.ts";

/** The event log's stream count a runner makes by default. */
const EVENT_STREAMS = DEFAULT_EVENT_STREAMS;

const nats = useNatsServer();

describe("reading back while a turn is deleted", () => {
  it("ends, every time, with what was left of the turn, in order", async () => {
    const nc = await nats.connect("runner");
    const [js, jsm] = [jetstream(nc), await jetstreamManager(nc)];
    await ensureEventStreams(jsm);
    for (let round = 1; round <= 5; round++) {
      const events = Array.from({ length: 150 }, (_, seq) => ({
        session_id: "deleting",
        turn_id: round,
        seq,
        ts_monotonic: seq,
        kind: "TURN_STAGE_CHANGED",
        payload: { stage: "agents" },
      }));
      await Promise.all(
        events.map((event) => js.publish(subjects.turnEvents("deleting", round, EVENT_STREAMS), encodeJson(event))),
      );
      const erasing = secureErase(
        jsm,
        eventStreamOf("deleting", EVENT_STREAMS),
        subjects.turnEvents("deleting", round, EVENT_STREAMS),
        {
          log: silentLogger,
          label: "test",
        },
      );
      const read = await withDeadline(
        20_000,
        () => readEvents(js, jsm, "deleting", round),
        () => new Error(`round ${round}: the read never ended`),
      );
      await erasing;
      // Whatever it read is what was left when it read it, in order: deletes go in stream order, so that is the
      // turn's end.
      const first = read[0]?.seq ?? 0;
      expect(read.map((event) => event.seq)).toEqual(read.map((_, index) => first + index));
      if (read.length > 0) expect(read.at(-1)?.seq).toBe(149);
    }
    await nc.close();
  });
});
