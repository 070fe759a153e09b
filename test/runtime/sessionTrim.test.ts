/**
 * Retention by count: a runner told to keep 2 turns per session trims the
 * oldest turn's events and status as each later turn ends, and leaves the
 * turns inside the window, and other sessions, as they were.
 */
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { beforeAll, describe, expect, it } from "vitest";
import { type ConclaveClient, connect } from "../../src/client/index.ts";
import { readEvents } from "../../src/eventlog/reader.ts";
import { retentionSettings } from "../../src/eventlog/retention.ts";
import { TurnStatusStore } from "../../src/eventlog/turnStatusStore.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { useInProcessStack } from "../helpers/stack.ts";
import { until } from "../helpers/wait.ts";

const nats = useNatsServer();
useInProcessStack(nats, { retention: { turnsPerSession: 2 } });
let client: ConclaveClient;

beforeAll(async () => {
  client = await connect({ nc: await nats.connect("client") });
});

describe("retention by count", () => {
  it("keeps the last N turns of a session: the turn that falls out of the window loses its events and status", async () => {
    const nc = await nats.connect("observer");
    const [js, jsm] = [jetstream(nc), await jetstreamManager(nc)];
    const statuses = await TurnStatusStore.open(nc);
    for (const text of ["one", "two", "three"]) await client.submit("trim-a", `I'm stressed: ${text}`).result;
    await client.submit("trim-b", "I'm stressed about my deadline").result;

    await until(async () => (await readEvents(js, jsm, "trim-a", 1)).length === 0, { what: "turn 1 trimmed" });
    expect(await statuses.get("trim-a", 1)).toBeNull();
    for (const turnId of [2, 3]) {
      expect((await readEvents(js, jsm, "trim-a", turnId)).at(-1)?.kind).toBe("TURN_COMPLETED");
      expect((await statuses.get("trim-a", turnId))?.status).toBe("done");
    }
    expect((await readEvents(js, jsm, "trim-b", 1)).at(-1)?.kind).toBe("TURN_COMPLETED");
    await nc.close();
  });

  it("is read from CONCLAVE_RETAIN_TURNS_PER_SESSION, a whole number from 1", () => {
    expect(retentionSettings({}, { CONCLAVE_RETAIN_TURNS_PER_SESSION: "50" })).toEqual({ turnsPerSession: 50 });
    expect(() => retentionSettings({}, { CONCLAVE_RETAIN_TURNS_PER_SESSION: "0" })).toThrow(
      'CONCLAVE_RETAIN_TURNS_PER_SESSION="0" is invalid: must be a whole number from 1',
    );
  });
});
