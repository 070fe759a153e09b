import { describe, expect, it } from "vitest";
import { AGENTS } from "../../agents/index.ts";
import { zeroSensors } from "../../machines/turn.ts";
import { defaultSchedulerOptions, planWaves, scoreAgent } from "../../src/cognition/scheduler.ts";
import type { AgentManifest } from "../../src/contracts/agent.ts";
import { type Modulators, neutralModulators, type Sensors } from "../../src/contracts/workspace.ts";

const roster: AgentManifest[] = [...AGENTS.values()].map((agent) => agent.manifest);
const byPriority = (priority: AgentManifest["priority"]) =>
  roster.filter((manifest) => manifest.priority === priority).map((manifest) => manifest.id);

const sensors = (overrides: Partial<Sensors> = {}): Sensors => ({ ...zeroSensors(), ...overrides });
const modulators = (overrides: Partial<Modulators> = {}): Modulators => ({ ...neutralModulators(), ...overrides });

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
    const { waves } = planWaves(roster, zeroSensors(), neutralModulators());
    expect(waves[0]).toEqual(byPriority("ALWAYS_ON"));
  });

  it("schedules MONITOR agents even with zero sensors, and leaves out SCHEDULED agents scoring 0", () => {
    const { waves, scores } = planWaves(roster, zeroSensors(), neutralModulators());
    expect(waves).toHaveLength(2);
    expect([...waves[1]!].sort()).toEqual(byPriority("MONITOR").sort());
    for (const id of byPriority("SCHEDULED")) {
      expect(scores[id], id).toBe(0);
      expect(waves.flat(), id).not.toContain(id);
    }
  });

  it("does not score ALWAYS_ON agents", () => {
    const { scores } = planWaves(roster, zeroSensors(), neutralModulators());
    for (const id of byPriority("ALWAYS_ON")) expect(scores).not.toHaveProperty(id);
    expect(Object.keys(scores).sort()).toEqual([...byPriority("MONITOR"), ...byPriority("SCHEDULED")].sort());
  });

  it("schedules emotion agents when the user is vulnerable, with rising scores", () => {
    const calm = planWaves(roster, sensors({ vulnerability: 0.4 }), neutralModulators());
    const upset = planWaves(roster, sensors({ vulnerability: 0.8 }), neutralModulators());
    const emotionIds = roster.filter((m) => m.agency === "emotion").map((m) => m.id);
    for (const id of emotionIds) {
      expect(upset.waves[1], id).toContain(id);
      expect(upset.scores[id]!, id).toBeGreaterThan(calm.scores[id]!);
    }
  });

  it("caps wave 1 at maxAgentsPerWave", () => {
    const vulnerable = sensors({ vulnerability: 0.8 });
    const { waves } = planWaves(roster, vulnerable, neutralModulators(), { maxAgentsPerWave: 1 });
    expect(waves[1]).toHaveLength(1);
    const { waves: uncapped } = planWaves(roster, vulnerable, neutralModulators());
    expect(uncapped[1]!.length).toBeGreaterThan(1);
    expect(waves[1]![0]).toBe(uncapped[1]![0]);
  });

  it("uses a default cap of 10", () => {
    expect(defaultSchedulerOptions.maxAgentsPerWave).toBe(10);
  });
});

describe("planWaves with hand-built manifests", () => {
  it("orders wave 1 best score first", () => {
    const manifests = [
      manifest({ id: "social.low", agency: "social", priority: "MONITOR" }),
      manifest({ id: "emotion.high", agency: "emotion", triggers: ["vulnerability"] }),
      manifest({ id: "reasoning.mid", agency: "reasoning" }),
    ];
    const { waves, scores } = planWaves(
      manifests,
      sensors({ vulnerability: 0.8, advice_requested: 0.5 }),
      neutralModulators(),
    );
    expect(waves).toEqual([["emotion.high", "reasoning.mid", "social.low"]]);
    expect(scores["emotion.high"]!).toBeGreaterThan(scores["reasoning.mid"]!);
    expect(scores["reasoning.mid"]!).toBeGreaterThan(scores["social.low"]!);
  });

  it("breaks ties by id", () => {
    const manifests = ["social.c", "social.a", "social.b"].map((id) =>
      manifest({ id, agency: "social", priority: "MONITOR" }),
    );
    const { waves } = planWaves(manifests, zeroSensors(), neutralModulators());
    expect(waves).toEqual([["social.a", "social.b", "social.c"]]);
  });

  it("keeps the best-scored agents when capping", () => {
    const manifests = [
      manifest({ id: "planning.a", agency: "planning", priority: "MONITOR" }),
      manifest({ id: "reasoning.b", agency: "reasoning" }),
      manifest({ id: "reasoning.c", agency: "reasoning", triggers: ["advice_requested"] }),
    ];
    const { waves } = planWaves(manifests, sensors({ advice_requested: 0.6 }), neutralModulators(), {
      maxAgentsPerWave: 2,
    });
    expect(waves).toEqual([["reasoning.c", "reasoning.b"]]);
  });

  it("drops empty waves", () => {
    const alwaysOn = manifest({ id: "inhibition.guard", agency: "inhibition", priority: "ALWAYS_ON" });
    const idle = manifest({ id: "planning.idle", agency: "planning" });
    expect(planWaves([idle], zeroSensors(), neutralModulators()).waves).toEqual([]);
    expect(planWaves([alwaysOn, idle], zeroSensors(), neutralModulators()).waves).toEqual([["inhibition.guard"]]);
    expect(planWaves([], zeroSensors(), neutralModulators()).waves).toEqual([]);
    for (const wave of planWaves(roster, zeroSensors(), neutralModulators()).waves)
      expect(wave.length).toBeGreaterThan(0);
  });

  it("does not modify the manifests it is given", () => {
    const manifests = [manifest({ id: "social.x", agency: "social", priority: "MONITOR", triggers: ["rupture"] })];
    const before = structuredClone(manifests);
    planWaves(manifests, sensors({ rupture: 0.9 }), modulators({ social_risk: 0.9 }));
    expect(manifests).toEqual(before);
  });
});
