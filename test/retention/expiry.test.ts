/**
 * Retention that expires content (issue 41): with short maximum ages and a
 * turn limit of 2, nothing trimmed or expired is reachable through memory
 * search, the session's events or any store; and `conclave replay` after
 * expiry exits 0. A real nats-server; every wait polls the store until the
 * entry is gone (the stores' own clocks), bounded.
 */
import type { NatsConnection } from "@nats-io/nats-core";
import { beforeAll, describe, expect, it } from "vitest";
import { type ConclaveClient, connect } from "../../src/client/index.ts";
import { runConclave } from "../helpers/cli.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { reachable } from "../helpers/reachable.ts";
import { useInProcessStack } from "../helpers/stack.ts";
import { until } from "../helpers/wait.ts";

const AGE_MS = 20_000;
const nats = useNatsServer();
useInProcessStack(nats, {
  retention: {
    minimumAgeMs: 1_000,
    eventsMaxAgeMs: AGE_MS,
    turnStatusesMaxAgeMs: AGE_MS,
    episodesMaxAgeMs: AGE_MS,
    memoryGraphMaxAgeMs: AGE_MS,
    sessionStateMaxAgeMs: AGE_MS,
    blackboardsMaxAgeMs: AGE_MS,
    turnsPerSession: 2,
  },
});
let client: ConclaveClient;
let observer: NatsConnection;
/** Reads stored messages by sequence, which only the runner role may. */
let inspector: NatsConnection;

beforeAll(async () => {
  client = await connect({ nc: await nats.connect("client") });
  observer = await nats.connect("observer");
  inspector = await nats.connect("runner");
});

const SESSION = "retention-canaries";
/** One canary per turn: a word that occurs nowhere else. */
const canary = (turn: number) => `zqcanary${turn}x`;
/** Where `text` can still be reached: the session's events (MEMORY_RETRIEVED included), memory search, every store. */
const reachableIn = (text: string) => reachable({ client, observer, inspector }, SESSION, text);

describe("retention that expires content", () => {
  it("a turn trimmed by count leaves nothing reachable; what ages out goes too, and replay still exits 0", async () => {
    for (const turn of [1, 2, 3]) {
      const text = `I live in ${canary(turn)} and my sister is called ${canary(turn)}ia`;
      await client.submit(SESSION, text).result;
    }
    await client.truth.upsertFact(SESSION, { statement: `The office is in ${canary(9)}` });

    // Turn 1 fell out of the window when turn 3 ended: its events, episode, status, graph entries and copies go.
    await until(async () => (await reachableIn(canary(1))).length === 0, {
      what: `no copy of ${canary(1)} left`,
      timeoutMs: 15_000,
      everyMs: 250,
    });
    // Inside the window, the last turn is still reachable (the check can see a canary when there is one).
    expect(await reachableIn(canary(3))).not.toEqual([]);
    expect(await reachableIn(canary(9))).not.toEqual([]);

    // Past the maximum age, every store has dropped the rest (polled: nats-server's own expiry, the runner's sweeps).
    for (const turn of [2, 3, 9]) {
      await until(async () => (await reachableIn(canary(turn))).length === 0, {
        what: `${canary(turn)} expired everywhere`,
        timeoutMs: AGE_MS + 60_000,
        everyMs: 1_000,
      });
    }

    const replay = await runConclave(nats.url, ["replay", "--session", SESSION]);
    expect(replay.stderr).toBe("");
    expect(replay.code).toBe(0);
    expect(replay.stdout).toMatch(/no longer on the log/);
  }, 180_000);
});
