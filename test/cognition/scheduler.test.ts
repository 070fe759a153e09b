import { describe, expect, it } from "vitest";
import { AGENTS } from "../../agents/index.ts";
import {
  type Cooldowns,
  defaultSchedulerOptions,
  type PlanInput,
  planWaves,
  type SchedulerOptions,
  scoreAgent,
} from "../../src/cognition/scheduler.ts";
import type { AgentManifest } from "../../src/contracts/agent.ts";
import { PlanWavesReply } from "../../src/contracts/scheduler.ts";
import { type Modulators, neutralModulators, SENSOR_NAMES, type Sensors } from "../../src/contracts/workspace.ts";

const roster: AgentManifest[] = [...AGENTS.values()].map((agent) => agent.manifest);
const byPriority = (priority: AgentManifest["priority"]) =>
  roster.filter((manifest) => manifest.priority === priority).map((manifest) => manifest.id);
const budgetOf = (ids: readonly string[], manifests: readonly AgentManifest[] = roster) =>
  ids.reduce((sum, id) => sum + manifests.find((manifest) => manifest.id === id)!.token_budget, 0);
const rosterBudget = budgetOf(roster.map((manifest) => manifest.id));
const alwaysOnBudget = budgetOf(byPriority("ALWAYS_ON"));

const zeroSensors = (): Sensors => Object.fromEntries(SENSOR_NAMES.map((name) => [name, 0])) as Sensors;
const sensors = (overrides: Partial<Sensors> = {}): Sensors => ({ ...zeroSensors(), ...overrides });
const modulators = (overrides: Partial<Modulators> = {}): Modulators => ({ ...neutralModulators(), ...overrides });

const NOW = 1_700_000_000_000;

/** planWaves with a budget large enough for everyone, no cooldowns, at NOW, unless told otherwise. */
const plan = (
  manifests: readonly AgentManifest[],
  input: Partial<PlanInput> = {},
  options: SchedulerOptions = defaultSchedulerOptions,
) =>
  planWaves(
    manifests,
    {
      sensors: zeroSensors(),
      modulators: neutralModulators(),
      tokenBudget: 1_000_000,
      cooldowns: {},
      now: NOW,
      ...input,
    },
    options,
  );

const manifest = (overrides: Partial<AgentManifest> & Pick<AgentManifest, "id">): AgentManifest => ({
  agency: "reasoning",
  priority: "SCHEDULED",
  triggers: [],
  cooldown_s: 0,
  token_budget: 100,
  description: "test agent",
  ...overrides,
});

describe("the roster", () => {
  it("has at least one agent of each priority, so the scheduler tests below mean something", () => {
    expect(byPriority("ALWAYS_ON").length).toBeGreaterThan(0);
    expect(byPriority("MONITOR").length).toBeGreaterThan(0);
    expect(byPriority("SCHEDULED").length).toBeGreaterThan(0);
  });

  it("has a MONITOR agent with a cooldown, which the roster cooldown tests below rely on", () => {
    expect(AGENTS.get("planning.time_keeper")?.manifest).toMatchObject({ priority: "MONITOR", cooldown_s: 60 });
  });
});

describe("scoreAgent", () => {
  it("gives a MONITOR agent a base score of 0.2 with zero sensors and neutral modulators", () => {
    for (const id of byPriority("MONITOR")) {
      expect(scoreAgent(AGENTS.get(id)!.manifest, zeroSensors(), neutralModulators()), id).toBe(0.2);
    }
  });

  it("gives a SCHEDULED agent zero with zero sensors and neutral modulators", () => {
    for (const id of byPriority("SCHEDULED")) {
      expect(scoreAgent(AGENTS.get(id)!.manifest, zeroSensors(), neutralModulators()), id).toBe(0);
    }
  });

  it("raises emotion agents as vulnerability rises", () => {
    const emotion = roster.filter((m) => m.agency === "emotion");
    expect(emotion.length).toBeGreaterThan(0);
    for (const m of emotion) {
      const low = scoreAgent(m, sensors({ vulnerability: 0.2 }), neutralModulators());
      const mid = scoreAgent(m, sensors({ vulnerability: 0.5 }), neutralModulators());
      const high = scoreAgent(m, sensors({ vulnerability: 0.9 }), neutralModulators());
      expect(mid, m.id).toBeGreaterThan(low);
      expect(high, m.id).toBeGreaterThan(mid);
    }
  });

  it("ignores a sensor at or below 0.3", () => {
    const stress = AGENTS.get("emotion.stress")!.manifest;
    expect(scoreAgent(stress, sensors({ vulnerability: 0.3 }), neutralModulators())).toBe(0);
  });

  it("adds the agency sensor and half of each trigger above 0.3", () => {
    const agent = manifest({
      id: "reasoning.solver",
      agency: "reasoning",
      triggers: ["advice_requested", "ambiguity"],
    });
    // 0.6 (agency) + 0.3 (trigger advice_requested / 2) + 0.25 (trigger ambiguity / 2)
    expect(scoreAgent(agent, sensors({ advice_requested: 0.6, ambiguity: 0.5 }), neutralModulators())).toBeCloseTo(
      1.15,
    );
  });

  it("ignores triggers that name no sensor", () => {
    const agent = manifest({ id: "reasoning.odd", triggers: ["not_a_sensor"] });
    expect(scoreAgent(agent, sensors(), neutralModulators())).toBe(0);
  });

  it("adds 0.3 for the modulators that concern the agency", () => {
    const planner = manifest({ id: "planning.next", agency: "planning" });
    expect(scoreAgent(planner, sensors(), modulators({ time_pressure: 0.6 }))).toBeCloseTo(0.3);
    expect(scoreAgent(planner, sensors(), modulators({ arousal: 0.9, social_risk: 0.9 }))).toBe(0);
    const social = manifest({ id: "social.bond", agency: "social" });
    expect(scoreAgent(social, sensors(), modulators({ social_risk: 0.6 }))).toBeCloseTo(0.3);
    const emotion = manifest({ id: "emotion.calm", agency: "emotion" });
    expect(scoreAgent(emotion, sensors(), modulators({ arousal: 0.7 }))).toBeCloseTo(0.3);
    expect(scoreAgent(emotion, sensors(), modulators({ arousal: 0.6 }))).toBe(0);
  });
});

describe("planWaves with the real roster", () => {
  it("puts exactly the ALWAYS_ON agents in wave 0", () => {
    const { waves } = plan(roster);
    expect(waves[0]).toEqual(byPriority("ALWAYS_ON"));
  });

  it("schedules MONITOR agents even with zero sensors, and leaves out SCHEDULED agents scoring 0", () => {
    const { waves, scores, skipped } = plan(roster);
    expect(waves).toHaveLength(2);
    expect([...waves[1]!].sort()).toEqual(byPriority("MONITOR").sort());
    for (const id of byPriority("SCHEDULED")) {
      expect(scores[id], id).toBe(0);
      expect(waves.flat(), id).not.toContain(id);
    }
    // Agents scoring 0 are not candidates, so they are not "skipped" either.
    expect(skipped).toEqual([]);
  });

  it("does not score ALWAYS_ON agents", () => {
    const { scores } = plan(roster);
    for (const id of byPriority("ALWAYS_ON")) expect(scores).not.toHaveProperty(id);
    expect(Object.keys(scores).sort()).toEqual([...byPriority("MONITOR"), ...byPriority("SCHEDULED")].sort());
  });

  it("schedules emotion agents when the user is vulnerable, with rising scores", () => {
    const calm = plan(roster, { sensors: sensors({ vulnerability: 0.4 }) });
    const upset = plan(roster, { sensors: sensors({ vulnerability: 0.8 }) });
    const emotionIds = roster.filter((m) => m.agency === "emotion").map((m) => m.id);
    for (const id of emotionIds) {
      expect(upset.waves[1], id).toContain(id);
      expect(upset.scores[id]!, id).toBeGreaterThan(calm.scores[id]!);
    }
  });

  it("caps wave 1 at maxAgentsPerWave", () => {
    const vulnerable = sensors({ vulnerability: 0.8 });
    const { waves } = plan(roster, { sensors: vulnerable }, { maxAgentsPerWave: 1 });
    expect(waves[1]).toHaveLength(1);
    const { waves: uncapped } = plan(roster, { sensors: vulnerable });
    expect(uncapped[1]!.length).toBeGreaterThan(1);
    expect(waves[1]![0]).toBe(uncapped[1]![0]);
  });

  it("uses a default cap of 10", () => {
    expect(defaultSchedulerOptions.maxAgentsPerWave).toBe(10);
  });

  it("returns a reply the PlanWavesReply contract accepts", () => {
    const { cooldowns, ...reply } = plan(roster, { sensors: sensors({ vulnerability: 0.8, advice_requested: 0.7 }) });
    expect(PlanWavesReply.safeParse(reply).success).toBe(true);
    expect(Object.keys(cooldowns).length).toBeGreaterThan(0);
  });

  it("cools down the time keeper after it fires and lets it fire again 60 s later", () => {
    const first = plan(roster, { now: NOW });
    expect(first.waves[1]).toContain("planning.time_keeper");
    expect(first.cooldowns["planning.time_keeper"]).toBe(NOW + 60_000);

    const second = plan(roster, { now: NOW + 10_000, cooldowns: first.cooldowns });
    expect(second.waves.flat()).not.toContain("planning.time_keeper");
    expect(second.skipped).toContainEqual({ agent_id: "planning.time_keeper", reason: "cooldown" });

    const third = plan(roster, { now: NOW + 60_000, cooldowns: second.cooldowns });
    expect(third.waves[1]).toContain("planning.time_keeper");
    expect(third.cooldowns["planning.time_keeper"]).toBe(NOW + 120_000);
  });

  it("never plans more than the token budget once the ALWAYS_ON agents fit", () => {
    const busy = sensors({ vulnerability: 0.8, advice_requested: 0.7, ambiguity: 0.5, relational_bid: 0.6 });
    for (let tokenBudget = alwaysOnBudget; tokenBudget <= rosterBudget + 200; tokenBudget += 100) {
      const { waves, budget } = plan(roster, { sensors: busy, tokenBudget });
      expect(budget.limit).toBe(tokenBudget);
      expect(budget.planned, `budget ${tokenBudget}`).toBeLessThanOrEqual(tokenBudget);
      expect(budget.planned, `budget ${tokenBudget}`).toBe(budgetOf(waves.flat()));
    }
  });

  it("skips agents for the budget only when the budget is smaller than the candidates need", () => {
    const busy = sensors({ vulnerability: 0.8, advice_requested: 0.7 });
    const roomy = plan(roster, { sensors: busy, tokenBudget: rosterBudget });
    expect(roomy.skipped.filter((entry) => entry.reason === "budget")).toEqual([]);
    const tight = plan(roster, { sensors: busy, tokenBudget: alwaysOnBudget + 600 });
    expect(tight.skipped.filter((entry) => entry.reason === "budget").length).toBeGreaterThan(0);
    expect(tight.waves.flat().length).toBeLessThan(roomy.waves.flat().length);
  });
});

describe("planWaves with hand-built manifests", () => {
  it("orders wave 1 best score first", () => {
    const manifests = [
      manifest({ id: "social.low", agency: "social", priority: "MONITOR" }),
      manifest({ id: "emotion.high", agency: "emotion", triggers: ["vulnerability"] }),
      manifest({ id: "reasoning.mid", agency: "reasoning" }),
    ];
    const { waves, scores } = plan(manifests, { sensors: sensors({ vulnerability: 0.8, advice_requested: 0.5 }) });
    expect(waves).toEqual([["emotion.high", "reasoning.mid", "social.low"]]);
    expect(scores["emotion.high"]!).toBeGreaterThan(scores["reasoning.mid"]!);
    expect(scores["reasoning.mid"]!).toBeGreaterThan(scores["social.low"]!);
  });

  it("breaks ties by id", () => {
    const manifests = ["social.c", "social.a", "social.b"].map((id) =>
      manifest({ id, agency: "social", priority: "MONITOR" }),
    );
    const { waves } = plan(manifests);
    expect(waves).toEqual([["social.a", "social.b", "social.c"]]);
  });

  it("keeps the best-scored agents when capping", () => {
    const manifests = [
      manifest({ id: "planning.a", agency: "planning", priority: "MONITOR" }),
      manifest({ id: "reasoning.b", agency: "reasoning" }),
      manifest({ id: "reasoning.c", agency: "reasoning", triggers: ["advice_requested"] }),
    ];
    const { waves } = plan(manifests, { sensors: sensors({ advice_requested: 0.6 }) }, { maxAgentsPerWave: 2 });
    expect(waves).toEqual([["reasoning.c", "reasoning.b"]]);
  });

  it("drops empty waves", () => {
    const alwaysOn = manifest({ id: "inhibition.guard", agency: "inhibition", priority: "ALWAYS_ON" });
    const idle = manifest({ id: "planning.idle", agency: "planning" });
    expect(plan([idle]).waves).toEqual([]);
    expect(plan([alwaysOn, idle]).waves).toEqual([["inhibition.guard"]]);
    expect(plan([]).waves).toEqual([]);
    for (const wave of plan(roster).waves) expect(wave.length).toBeGreaterThan(0);
  });

  it("does not modify the manifests or the cooldowns it is given", () => {
    const manifests = [
      manifest({ id: "social.x", agency: "social", priority: "MONITOR", triggers: ["rupture"], cooldown_s: 5 }),
      manifest({ id: "social.y", agency: "social", priority: "MONITOR", cooldown_s: 5 }),
    ];
    const cooldowns: Cooldowns = { "social.y": NOW + 1_000, "social.gone": NOW - 1 };
    const before = structuredClone({ manifests, cooldowns });
    const result = plan(Object.freeze(manifests), {
      sensors: sensors({ rupture: 0.9 }),
      modulators: modulators({ social_risk: 0.9 }),
      cooldowns: Object.freeze(cooldowns),
    });
    expect({ manifests, cooldowns }).toEqual(before);
    expect(result.cooldowns).not.toBe(cooldowns);
  });
});

describe("planWaves: cooldowns", () => {
  const slow = manifest({ id: "planning.slow", agency: "planning", priority: "MONITOR", cooldown_s: 30 });
  const quick = manifest({ id: "planning.quick", agency: "planning", priority: "MONITOR", cooldown_s: 0 });
  const guard = manifest({ id: "inhibition.guard", agency: "inhibition", priority: "ALWAYS_ON", cooldown_s: 30 });

  it("marks a scheduled agent with a cooldown as fired until now + cooldown_s * 1000", () => {
    const { waves, cooldowns } = plan([slow, quick], { now: NOW });
    expect(waves).toEqual([["planning.quick", "planning.slow"]]);
    expect(cooldowns).toEqual({ "planning.slow": NOW + 30_000 });
  });

  it("skips an agent with reason cooldown until its cooldown ends, then fires it again", () => {
    const fired = plan([slow], { now: NOW }).cooldowns;
    for (const later of [NOW + 1, NOW + 15_000, NOW + 29_999]) {
      const result = plan([slow], { now: later, cooldowns: fired });
      expect(result.waves, `at +${later - NOW} ms`).toEqual([]);
      expect(result.skipped, `at +${later - NOW} ms`).toEqual([{ agent_id: "planning.slow", reason: "cooldown" }]);
      // Skipping does not extend the cooldown.
      expect(result.cooldowns).toEqual({ "planning.slow": NOW + 30_000 });
    }
    const again = plan([slow], { now: NOW + 30_000, cooldowns: fired });
    expect(again.waves).toEqual([["planning.slow"]]);
    expect(again.skipped).toEqual([]);
    expect(again.cooldowns).toEqual({ "planning.slow": NOW + 60_000 });
  });

  it("never cools down an agent with cooldown_s 0", () => {
    let cooldowns: Cooldowns = {};
    for (let turn = 0; turn < 3; turn++) {
      const result = plan([quick], { now: NOW + turn * 1_000, cooldowns });
      expect(result.waves).toEqual([["planning.quick"]]);
      cooldowns = result.cooldowns;
    }
    expect(cooldowns).toEqual({});
  });

  it("never cools down ALWAYS_ON agents, whatever their manifest or the cooldowns say", () => {
    let cooldowns: Cooldowns = {};
    for (let turn = 0; turn < 3; turn++) {
      const result = plan([guard, slow], { now: NOW + turn * 1_000, cooldowns });
      expect(result.waves[0]).toEqual(["inhibition.guard"]);
      expect(result.cooldowns).not.toHaveProperty("inhibition.guard");
      cooldowns = result.cooldowns;
    }
    const forced = plan([guard], { cooldowns: { "inhibition.guard": NOW + 60_000 } });
    expect(forced.waves).toEqual([["inhibition.guard"]]);
    expect(forced.skipped).toEqual([]);
  });

  it("drops expired cooldowns, including those of agents it does not know, and keeps live ones", () => {
    const { cooldowns } = plan([quick], {
      now: NOW,
      cooldowns: {
        "planning.expired": NOW - 1,
        "planning.just_now": NOW,
        "retired.agent": NOW - 86_400_000,
        "planning.live": NOW + 1,
        "retired.live": NOW + 5_000,
      },
    });
    expect(cooldowns).toEqual({ "planning.live": NOW + 1, "retired.live": NOW + 5_000 });
  });

  it("lets an agent fire at the very millisecond its cooldown ends", () => {
    const result = plan([slow], { now: NOW, cooldowns: { "planning.slow": NOW } });
    expect(result.waves).toEqual([["planning.slow"]]);
    expect(result.cooldowns).toEqual({ "planning.slow": NOW + 30_000 });
  });

  it("gives a cooling agent's place in a capped wave to the next best", () => {
    const best = manifest({ id: "reasoning.best", triggers: ["advice_requested"], cooldown_s: 10 });
    const next = manifest({ id: "reasoning.next" });
    const input = { sensors: sensors({ advice_requested: 0.8 }), cooldowns: { "reasoning.best": NOW + 5_000 } };
    const result = plan([best, next], input, { maxAgentsPerWave: 1 });
    expect(result.scores["reasoning.best"]!).toBeGreaterThan(result.scores["reasoning.next"]!);
    expect(result.waves).toEqual([["reasoning.next"]]);
    expect(result.skipped).toEqual([{ agent_id: "reasoning.best", reason: "cooldown" }]);
  });

  it("does not list an agent that scores 0 as skipped, even while it cools down", () => {
    const idle = manifest({ id: "reasoning.idle", cooldown_s: 10 });
    const result = plan([idle], { cooldowns: { "reasoning.idle": NOW + 5_000 } });
    expect(result.skipped).toEqual([]);
    expect(result.cooldowns).toEqual({ "reasoning.idle": NOW + 5_000 });
  });
});

describe("planWaves: token budget", () => {
  const guard = manifest({ id: "inhibition.guard", agency: "inhibition", priority: "ALWAYS_ON", token_budget: 300 });
  // Scores with advice_requested 0.8: high 0.8 + 0.4, mid 0.8, low 0.2 (MONITOR base).
  const high = manifest({ id: "reasoning.high", triggers: ["advice_requested"], token_budget: 400 });
  const mid = manifest({ id: "reasoning.mid", token_budget: 400 });
  const low = manifest({ id: "planning.low", agency: "planning", priority: "MONITOR", token_budget: 100 });
  const manifests = [guard, low, mid, high];
  const advice = sensors({ advice_requested: 0.8 });

  it("counts the ALWAYS_ON agents first and adds scored agents best first", () => {
    const { waves, budget, skipped } = plan(manifests, { sensors: advice, tokenBudget: 1_200 });
    expect(waves).toEqual([["inhibition.guard"], ["reasoning.high", "reasoning.mid", "planning.low"]]);
    expect(budget).toEqual({ limit: 1_200, planned: 1_200 });
    expect(skipped).toEqual([]);
  });

  it("skips lower-scored agents that do not fit with reason budget", () => {
    const { waves, budget, skipped } = plan(manifests, { sensors: advice, tokenBudget: 700 });
    expect(waves).toEqual([["inhibition.guard"], ["reasoning.high"]]);
    expect(skipped).toEqual([
      { agent_id: "reasoning.mid", reason: "budget" },
      { agent_id: "planning.low", reason: "budget" },
    ]);
    expect(budget).toEqual({ limit: 700, planned: 700 });
  });

  it("still fits a cheaper, lower-scored agent after skipping one that does not fit", () => {
    const { waves, budget, skipped } = plan(manifests, { sensors: advice, tokenBudget: 800 });
    expect(waves).toEqual([["inhibition.guard"], ["reasoning.high", "planning.low"]]);
    expect(skipped).toEqual([{ agent_id: "reasoning.mid", reason: "budget" }]);
    expect(budget.planned).toBe(800);
  });

  it("plans the sum of the planned agents' budgets and never more than the limit", () => {
    for (let tokenBudget = 300; tokenBudget <= 1_400; tokenBudget += 50) {
      const { waves, budget, skipped } = plan(manifests, { sensors: advice, tokenBudget });
      const planned = waves.flat();
      expect(budget.planned, `budget ${tokenBudget}`).toBe(budgetOf(planned, manifests));
      expect(budget.planned, `budget ${tokenBudget}`).toBeLessThanOrEqual(tokenBudget);
      // Every candidate is either planned or skipped for the budget.
      expect([...planned, ...skipped.map((entry) => entry.agent_id)].sort()).toEqual(manifests.map((m) => m.id).sort());
    }
  });

  it("runs the ALWAYS_ON agents even when they alone exceed the budget, and nothing else", () => {
    const { waves, budget, skipped } = plan(manifests, { sensors: advice, tokenBudget: 100 });
    expect(waves).toEqual([["inhibition.guard"]]);
    expect(budget).toEqual({ limit: 100, planned: 300 });
    expect(skipped.map((entry) => entry.reason)).toEqual(["budget", "budget", "budget"]);
  });

  it("does not mark an agent skipped for the budget as fired", () => {
    const costly = manifest({
      id: "reasoning.costly",
      triggers: ["advice_requested"],
      token_budget: 900,
      cooldown_s: 30,
    });
    const { waves, cooldowns, skipped } = plan([guard, costly], { sensors: advice, tokenBudget: 1_000 });
    expect(waves).toEqual([["inhibition.guard"]]);
    expect(skipped).toEqual([{ agent_id: "reasoning.costly", reason: "budget" }]);
    expect(cooldowns).toEqual({});
  });

  it("reports a cooling agent as cooldown rather than budget", () => {
    const result = plan(manifests, {
      sensors: advice,
      tokenBudget: 300,
      cooldowns: { "reasoning.high": NOW + 1_000 },
    });
    expect(result.skipped).toContainEqual({ agent_id: "reasoning.high", reason: "cooldown" });
    expect(result.skipped).not.toContainEqual({ agent_id: "reasoning.high", reason: "budget" });
  });
});
