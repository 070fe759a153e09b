import { describe, expect, it } from "vitest";
import { createActor, fromPromise, toPromise } from "xstate";
import { AGENTS } from "../../agents/index.ts";
import { schedulerMachine } from "../../machines/scheduler.ts";
import { type Cooldowns, planWaves } from "../../src/cognition/scheduler.ts";
import type { AgentManifest } from "../../src/contracts/agent.ts";
import { PlanWavesReply, type PlanWavesRequest } from "../../src/contracts/scheduler.ts";
import { neutralModulators, SENSOR_NAMES, type Sensors } from "../../src/contracts/workspace.ts";

const roster: AgentManifest[] = [...AGENTS.values()].map((agent) => agent.manifest);
const zeroSensors = (): Sensors => Object.fromEntries(SENSOR_NAMES.map((name) => [name, 0])) as Sensors;
const NOW = 1_700_000_000_000;

const request = (overrides: Partial<PlanWavesRequest> = {}): PlanWavesRequest => ({
  session_id: "s1",
  turn_id: 1,
  sensors: zeroSensors(),
  modulators: neutralModulators(),
  token_budget: 8_000,
  ...overrides,
});

/** A cooldown store: a Map by session id, with a log of every call. */
function fakeStore(
  map = new Map<string, Cooldowns>(),
  failures: { load?: Error; save?: Error } = {},
): {
  map: Map<string, Cooldowns>;
  calls: string[];
  actors: Parameters<typeof schedulerMachine.provide>[0]["actors"];
} {
  const calls: string[] = [];
  return {
    map,
    calls,
    actors: {
      loadCooldowns: fromPromise<Cooldowns, { session_id: string }>(async ({ input }) => {
        calls.push(`load ${input.session_id}`);
        if (failures.load) throw failures.load;
        return structuredClone(map.get(input.session_id) ?? {});
      }),
      saveCooldowns: fromPromise<void, { session_id: string; cooldowns: Cooldowns }>(async ({ input }) => {
        calls.push(`save ${input.session_id}`);
        if (failures.save) throw failures.save;
        map.set(input.session_id, structuredClone(input.cooldowns));
      }),
    },
  };
}

async function run(store: ReturnType<typeof fakeStore>, planRequest: PlanWavesRequest, now: number) {
  const actor = createActor(schedulerMachine.provide({ actors: store.actors }), {
    input: { request: planRequest, manifests: roster, now },
  });
  actor.start();
  const output = await toPromise(actor);
  return { output, state: actor.getSnapshot().value };
}

describe("scheduler machine", () => {
  it("loads the cooldowns, plans, then saves what planWaves marked fired", async () => {
    const store = fakeStore();
    const { output, state } = await run(store, request(), NOW);
    expect(state).toBe("planned");
    expect(store.calls).toEqual(["load s1", "save s1"]);

    const { cooldowns, ...expected } = planWaves(roster, {
      sensors: zeroSensors(),
      modulators: neutralModulators(),
      tokenBudget: 8_000,
      cooldowns: {},
      now: NOW,
    });
    expect(output).toEqual({ reply: expected, notes: [] });
    expect(store.map.get("s1")).toEqual(cooldowns);
    // The time keeper is a MONITOR agent with a 60 s cooldown, so it fires with zero sensors.
    expect(store.map.get("s1")).toEqual({ "planning.time_keeper": NOW + 60_000 });
    expect(PlanWavesReply.safeParse(output.reply).success).toBe(true);
  });

  it("replies with the plan only, not the cooldowns", async () => {
    const { output } = await run(fakeStore(), request(), NOW);
    expect(output.reply).not.toHaveProperty("cooldowns");
    expect(Object.keys(output.reply).sort()).toEqual(["budget", "scores", "skipped", "waves"]);
  });

  it("honours the loaded cooldowns and saves them back unchanged while they run", async () => {
    const store = fakeStore(new Map([["s1", { "planning.time_keeper": NOW + 10_000 }]]));
    const { output } = await run(store, request(), NOW);
    expect(output.reply.waves.flat()).not.toContain("planning.time_keeper");
    expect(output.reply.skipped).toEqual([{ agent_id: "planning.time_keeper", reason: "cooldown" }]);
    expect(store.map.get("s1")).toEqual({ "planning.time_keeper": NOW + 10_000 });
  });

  it("keeps cooldowns across runs, per session, when the store is a Map", async () => {
    const store = fakeStore();
    const first = await run(store, request({ turn_id: 1 }), NOW);
    expect(first.output.reply.waves[1]).toContain("planning.time_keeper");

    const second = await run(store, request({ turn_id: 2 }), NOW + 30_000);
    expect(second.output.reply.waves.flat()).not.toContain("planning.time_keeper");
    expect(second.output.reply.skipped).toContainEqual({ agent_id: "planning.time_keeper", reason: "cooldown" });

    const otherSession = await run(store, request({ session_id: "s2" }), NOW + 30_000);
    expect(otherSession.output.reply.waves[1]).toContain("planning.time_keeper");

    const third = await run(store, request({ turn_id: 3 }), NOW + 60_000);
    expect(third.output.reply.waves[1]).toContain("planning.time_keeper");
    expect(store.map.get("s1")).toEqual({ "planning.time_keeper": NOW + 120_000 });
    expect(store.map.get("s2")).toEqual({ "planning.time_keeper": NOW + 90_000 });
  });

  it("drops expired cooldowns from the store", async () => {
    const store = fakeStore(new Map([["s1", { "planning.time_keeper": NOW - 1, "retired.agent": NOW - 5_000 }]]));
    await run(store, request(), NOW);
    expect(store.map.get("s1")).toEqual({ "planning.time_keeper": NOW + 60_000 });
  });

  it("plans without cooldowns when they cannot be loaded, and notes it", async () => {
    const store = fakeStore(new Map([["s1", { "planning.time_keeper": NOW + 10_000 }]]), {
      load: new Error("kv unavailable"),
    });
    const { output, state } = await run(store, request(), NOW);
    expect(state).toBe("planned");
    expect(output.reply.waves[1]).toContain("planning.time_keeper");
    expect(output.reply.skipped).toEqual([]);
    expect(output.notes).toHaveLength(1);
    expect(output.notes[0]).toMatch(/^cooldowns not loaded: .*kv unavailable/);
    // It still saves what it marked.
    expect(store.calls).toEqual(["load s1", "save s1"]);
    expect(store.map.get("s1")).toEqual({ "planning.time_keeper": NOW + 60_000 });
  });

  it("still replies when the cooldowns cannot be saved, and notes it", async () => {
    const store = fakeStore(new Map(), { save: new Error("disk full") });
    const { output, state } = await run(store, request(), NOW);
    expect(state).toBe("planned");
    const { cooldowns: _marked, ...expected } = planWaves(roster, {
      sensors: zeroSensors(),
      modulators: neutralModulators(),
      tokenBudget: 8_000,
      cooldowns: {},
      now: NOW,
    });
    expect(output.reply).toEqual(expected);
    expect(output.notes).toHaveLength(1);
    expect(output.notes[0]).toMatch(/^cooldowns not saved: .*disk full/);
    expect(store.map.has("s1")).toBe(false);
  });

  it("notes both failures, in order, when the store is down", async () => {
    const store = fakeStore(new Map(), { load: new Error("down"), save: new Error("still down") });
    const { output } = await run(store, request(), NOW);
    expect(output.notes).toHaveLength(2);
    expect(output.notes[0]).toMatch(/^cooldowns not loaded/);
    expect(output.notes[1]).toMatch(/^cooldowns not saved/);
    expect(output.reply.waves[0]!.length).toBeGreaterThan(0);
  });

  it("plans with the request's token budget", async () => {
    const busy = { ...zeroSensors(), vulnerability: 0.8, advice_requested: 0.7 };
    const { output } = await run(fakeStore(), request({ sensors: busy, token_budget: 2_000 }), NOW);
    expect(output.reply.budget.limit).toBe(2_000);
    expect(output.reply.budget.planned).toBeLessThanOrEqual(2_000);
    expect(output.reply.skipped.some((entry) => entry.reason === "budget")).toBe(true);
  });
});
