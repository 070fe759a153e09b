import { jetstreamManager } from "@nats-io/jetstream";
import { describe, expect, it } from "vitest";
import { eventStream, subjects } from "../../src/bus/subjects.ts";
import { nextMessage, secureErase, subjectMatches } from "../../src/eventlog/eraseSecure.ts";
import { ensureEventStreams } from "../../src/eventlog/eventStreams.ts";
import { silentLogger } from "../../src/telemetry/log.ts";
import { useNatsServer } from "../helpers/nats.ts";

const nats = useNatsServer();

describe("subject filters", () => {
  it("match as NATS does: * one token, > one or more, else token for token", () => {
    expect(subjectMatches("conclave.events.s1.*", "conclave.events.s1.3")).toBe(true);
    expect(subjectMatches("conclave.events.s1.*", "conclave.events.s1.3.x")).toBe(false);
    expect(subjectMatches("conclave.events.s1.>", "conclave.events.s1.3.x")).toBe(true);
    expect(subjectMatches("conclave.events.s1.>", "conclave.events.s1")).toBe(false);
    expect(subjectMatches("conclave.events.s1.3", "conclave.events.s1.3")).toBe(true);
    expect(subjectMatches("conclave.events.s1.3", "conclave.events.s10.3")).toBe(false);
    expect(subjectMatches("conclave.events.s1", "conclave.events.s1.3")).toBe(false);
  });
});

describe("secure erase", () => {
  it("erases exactly the matching messages of the filter, in a stream that interleaves others", async () => {
    const nc = await nats.connect("runner");
    const jsm = await jetstreamManager(nc);
    // One stream, so that the two sessions' messages interleave in it.
    await ensureEventStreams(jsm, 1);
    const stream = eventStream(0);
    const js = jsm.jetstream();
    // Two sessions' turns interleaved: "gone" is erased, "kept" stays.
    for (let i = 0; i < 30; i++) {
      await js.publish(subjects.turnEvents(i % 3 === 0 ? "gone" : "kept", i + 1, 1), new TextEncoder().encode(`m${i}`));
    }
    const before = (await jsm.streams.info(stream)).state.messages;
    const spared = (await nextMessage(jsm, stream, subjects.sessionEvents("gone", 1), 1))?.seq;
    const erased = await secureErase(
      jsm,
      stream,
      subjects.sessionEvents("gone", 1),
      { log: silentLogger, label: "t" },
      {
        matches: (msg) => msg.seq !== spared,
      },
    );
    expect(erased).toBe(9);
    expect((await jsm.streams.info(stream)).state.messages).toBe(before - 9);
    expect((await nextMessage(jsm, stream, subjects.sessionEvents("gone", 1), 1))?.seq).toBe(spared);
    await nc.close();
  });
});
