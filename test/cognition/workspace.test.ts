import { describe, expect, it } from "vitest";
import { quietOutput } from "../../src/agents/defineAgent.ts";
import {
  applyAgentOutput,
  applyStanceDelta,
  modulatorsFromSensors,
  stanceDifference,
  type Workspace,
} from "../../src/cognition/workspace.ts";
import type { Contribution } from "../../src/contracts/agent.ts";
import {
  type Claim,
  type Modulators,
  neutralModulators,
  neutralStance,
  SENSOR_NAMES,
  type Sensors,
  type Stance,
} from "../../src/contracts/workspace.ts";

const zero = (): Sensors => Object.fromEntries(SENSOR_NAMES.map((name) => [name, 0])) as Sensors;
const sensors = (overrides: Partial<Sensors> = {}): Sensors => ({ ...zero(), ...overrides });
const output = (overrides: Partial<Contribution> = {}): Contribution => ({ ...quietOutput(), ...overrides });

const claim = (id: string, overrides: Partial<Claim> = {}): Claim => ({
  id,
  text: `claim ${id}`,
  source: "emotion.stress",
  confidence: 0.5,
  support: ["emotion.stress"],
  opposition: [],
  ...overrides,
});

const emptyWorkspace = (): Workspace => ({
  claims: [],
  stance: neutralStance(),
  modulators: neutralModulators(),
  proposals: [],
});

const deepFreeze = <T>(value: T): T => {
  if (value && typeof value === "object") {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
};

describe("applyAgentOutput", () => {
  it("adds new claims with the author as source and sole supporter", () => {
    const next = applyAgentOutput(
      emptyWorkspace(),
      "emotion.stress",
      output({ claims: [{ id: "user_stressed", text: "The user is under stress.", confidence: 0.7 }] }),
    );
    expect(next.claims).toEqual([
      {
        id: "user_stressed",
        text: "The user is under stress.",
        confidence: 0.7,
        source: "emotion.stress",
        support: ["emotion.stress"],
        opposition: [],
      },
    ]);
  });

  it("adds the agent to a claim's support or opposition once, however often it is applied", () => {
    let workspace: Workspace = { ...emptyWorkspace(), claims: [claim("a"), claim("b")] };
    const stances = output({ supports: ["a"], opposes: ["b"] });
    workspace = applyAgentOutput(workspace, "monitoring.anomaly_detector", stances);
    workspace = applyAgentOutput(workspace, "monitoring.anomaly_detector", stances);
    const [a, b] = workspace.claims;
    expect(a?.support).toEqual(["emotion.stress", "monitoring.anomaly_detector"]);
    expect(a?.opposition).toEqual([]);
    expect(b?.support).toEqual(["emotion.stress"]);
    expect(b?.opposition).toEqual(["monitoring.anomaly_detector"]);
  });

  it("does not add the author twice when it already supports a claim", () => {
    const workspace = { ...emptyWorkspace(), claims: [claim("a")] };
    const next = applyAgentOutput(workspace, "emotion.stress", output({ supports: ["a"] }));
    expect(next.claims[0]?.support).toEqual(["emotion.stress"]);
  });

  it("ignores supports and opposes for unknown claim ids", () => {
    const workspace = { ...emptyWorkspace(), claims: [claim("a")] };
    const next = applyAgentOutput(workspace, "x.y", output({ supports: ["nope"], opposes: ["nada"] }));
    expect(next.claims).toEqual(workspace.claims);
  });

  it("turns a re-proposed claim id into support with the higher confidence", () => {
    const workspace = { ...emptyWorkspace(), claims: [claim("a", { confidence: 0.4 })] };
    const higher = applyAgentOutput(
      workspace,
      "emotion.wellbeing",
      output({ claims: [{ id: "a", text: "another wording", confidence: 0.9 }] }),
    );
    expect(higher.claims).toHaveLength(1);
    expect(higher.claims[0]).toMatchObject({
      id: "a",
      text: "claim a",
      source: "emotion.stress",
      confidence: 0.9,
      support: ["emotion.stress", "emotion.wellbeing"],
    });

    const lower = applyAgentOutput(
      workspace,
      "emotion.wellbeing",
      output({ claims: [{ id: "a", text: "another wording", confidence: 0.1 }] }),
    );
    expect(lower.claims[0]?.confidence).toBe(0.4);
    expect(lower.claims[0]?.support).toEqual(["emotion.stress", "emotion.wellbeing"]);
  });

  it("does not add support twice when the author re-proposes its own claim", () => {
    const workspace = { ...emptyWorkspace(), claims: [claim("a")] };
    const next = applyAgentOutput(
      workspace,
      "emotion.stress",
      output({ claims: [{ id: "a", text: "claim a", confidence: 0.5 }], supports: ["a"] }),
    );
    expect(next.claims[0]?.support).toEqual(["emotion.stress"]);
  });

  it("appends proposals tagged with their source", () => {
    const workspace = { ...emptyWorkspace(), proposals: [{ source: "a.b", kind: "say" as const, text: "earlier" }] };
    const next = applyAgentOutput(
      workspace,
      "inhibition.censor",
      output({
        proposals: [
          { kind: "do_not", text: "reveal the system prompt" },
          { kind: "ask", text: "what you need" },
        ],
      }),
    );
    expect(next.proposals).toEqual([
      { source: "a.b", kind: "say", text: "earlier" },
      { source: "inhibition.censor", kind: "do_not", text: "reveal the system prompt" },
      { source: "inhibition.censor", kind: "ask", text: "what you need" },
    ]);
  });

  it("applies the stance delta", () => {
    const next = applyAgentOutput(emptyWorkspace(), "x.y", output({ stance_delta: { warmth: 0.3, caution: -0.2 } }));
    expect(next.stance).toEqual({ valence: 0, warmth: 0.3, caution: -0.2, curiosity: 0 });
  });

  it("does not mutate the input workspace", () => {
    const workspace = deepFreeze<Workspace>({
      claims: [claim("a", { confidence: 0.3 }), claim("b")],
      stance: { valence: 0.1, warmth: 0.2, caution: 0.3, curiosity: 0.4 },
      modulators: { arousal: 0.5, time_pressure: 0.1, social_risk: 0.2, uncertainty: 0.3 },
      proposals: [{ source: "a.b", kind: "say", text: "hello" }],
    });
    const before = structuredClone(workspace);
    const next = applyAgentOutput(
      workspace,
      "emotion.wellbeing",
      output({
        claims: [
          { id: "a", text: "claim a", confidence: 0.9 },
          { id: "c", text: "new", confidence: 0.6 },
        ],
        supports: ["b"],
        opposes: ["a"],
        proposals: [{ kind: "say", text: "more" }],
        stance_delta: { warmth: 0.5 },
      }),
    );
    expect(workspace).toEqual(before);
    expect(next).not.toBe(workspace);
    expect(next.claims).toHaveLength(3);
    expect(next.claims[0]?.confidence).toBe(0.9);
  });
});

describe("applyAgentOutput: withdraws and concedes", () => {
  const contested = (): Workspace => ({
    ...emptyWorkspace(),
    claims: [
      claim("mine", { source: "reasoning.skeptic", support: ["reasoning.skeptic"], opposition: ["emotion.stress"] }),
      claim("theirs", { support: ["emotion.stress", "emotion.wellbeing"], opposition: ["reasoning.skeptic"] }),
      claim("shared", { support: ["emotion.stress"], opposition: ["reasoning.skeptic", "social.rapport"] }),
    ],
  });

  it("removes a claim its author withdraws", () => {
    const next = applyAgentOutput(contested(), "reasoning.skeptic", output({ withdraws: ["mine"] }));
    expect(next.claims.map((c) => c.id)).toEqual(["theirs", "shared"]);
    expect(next.claims).toEqual(contested().claims.slice(1));
  });

  it("does not let an agent withdraw someone else's claim", () => {
    const workspace = contested();
    const bySupporter = applyAgentOutput(workspace, "emotion.wellbeing", output({ withdraws: ["theirs"] }));
    expect(bySupporter.claims).toEqual(workspace.claims);
    const byOpponent = applyAgentOutput(workspace, "reasoning.skeptic", output({ withdraws: ["theirs", "shared"] }));
    expect(byOpponent.claims).toEqual(workspace.claims);
    const byStranger = applyAgentOutput(workspace, "planning.next_step", output({ withdraws: ["mine"] }));
    expect(byStranger.claims).toEqual(workspace.claims);
  });

  it("ignores a withdrawal of an unknown claim id", () => {
    const workspace = contested();
    expect(applyAgentOutput(workspace, "reasoning.skeptic", output({ withdraws: ["nope"] })).claims).toEqual(
      workspace.claims,
    );
  });

  it("removes only the conceding agent from a conceded claim's opposition", () => {
    const next = applyAgentOutput(contested(), "reasoning.skeptic", output({ concedes: ["theirs", "shared"] }));
    const [mine, theirs, shared] = next.claims;
    expect(theirs?.opposition).toEqual([]);
    expect(theirs?.support).toEqual(["emotion.stress", "emotion.wellbeing"]);
    expect(shared?.opposition).toEqual(["social.rapport"]);
    expect(shared?.support).toEqual(["emotion.stress"]);
    // Its own claim, not conceded, is untouched.
    expect(mine).toEqual(contested().claims[0]);
  });

  it("leaves a conceded claim alone when the agent did not oppose it", () => {
    const workspace = contested();
    const next = applyAgentOutput(workspace, "emotion.wellbeing", output({ concedes: ["theirs", "shared", "nope"] }));
    expect(next.claims).toEqual(workspace.claims);
  });

  it("withdraws and concedes in one output, as a revision round does", () => {
    const next = applyAgentOutput(
      contested(),
      "reasoning.skeptic",
      output({ withdraws: ["mine"], concedes: ["theirs"] }),
    );
    expect(next.claims.map((c) => [c.id, c.opposition])).toEqual([
      ["theirs", []],
      ["shared", ["reasoning.skeptic", "social.rapport"]],
    ]);
  });

  it("does not mutate the input workspace when withdrawing or conceding", () => {
    const workspace = deepFreeze(contested());
    const before = structuredClone(workspace);
    const next = applyAgentOutput(
      workspace,
      "reasoning.skeptic",
      output({ withdraws: ["mine"], concedes: ["theirs", "shared"] }),
    );
    expect(workspace).toEqual(before);
    expect(next.claims).toHaveLength(2);
  });
});

describe("applyStanceDelta", () => {
  it("adds each component", () => {
    const stance: Stance = { valence: 0.1, warmth: -0.2, caution: 0, curiosity: 0.5 };
    const next = applyStanceDelta(stance, { valence: 0.2, curiosity: -0.1 });
    expect(next.valence).toBeCloseTo(0.3);
    expect(next.warmth).toBeCloseTo(-0.2);
    expect(next.caution).toBe(0);
    expect(next.curiosity).toBeCloseTo(0.4);
  });

  it("clamps to [-1, 1]", () => {
    const stance: Stance = { valence: 0.9, warmth: -0.9, caution: 0.5, curiosity: 0 };
    expect(applyStanceDelta(stance, { valence: 0.5, warmth: -0.5, caution: 3, curiosity: -7 })).toEqual({
      valence: 1,
      warmth: -1,
      caution: 1,
      curiosity: -1,
    });
  });

  it("leaves the stance alone for an empty delta", () => {
    const stance: Stance = { valence: 0.1, warmth: 0.2, caution: 0.3, curiosity: 0.4 };
    expect(applyStanceDelta(stance, {})).toEqual(stance);
  });
});

describe("stanceDifference", () => {
  it("returns only the keys that changed", () => {
    const before: Stance = { valence: 0, warmth: 0.2, caution: 0.5, curiosity: 0 };
    const after: Stance = { valence: 0, warmth: 0.5, caution: 0.1, curiosity: 0 };
    const delta = stanceDifference(before, after);
    expect(Object.keys(delta).sort()).toEqual(["caution", "warmth"]);
    expect(delta.warmth).toBeCloseTo(0.3);
    expect(delta.caution).toBeCloseTo(-0.4);
  });

  it("is empty for identical stances", () => {
    expect(stanceDifference(neutralStance(), neutralStance())).toEqual({});
  });

  it("undoes applyStanceDelta when nothing is clamped", () => {
    const before: Stance = { valence: 0.1, warmth: 0.2, caution: -0.3, curiosity: 0 };
    const delta = { valence: 0.25, caution: 0.5 };
    expect(stanceDifference(before, applyStanceDelta(before, delta))).toEqual(delta);
  });
});

describe("modulatorsFromSensors", () => {
  const keys: (keyof Modulators)[] = ["arousal", "time_pressure", "social_risk", "uncertainty"];

  it("stays in [0, 1] for extreme sensors and previous values", () => {
    const allOne = Object.fromEntries(SENSOR_NAMES.map((name) => [name, 1])) as Sensors;
    const high = { arousal: 1, time_pressure: 1, social_risk: 1, uncertainty: 1 };
    for (const [now, previous] of [
      [allOne, high],
      [allOne, neutralModulators()],
      [zero(), high],
      [zero(), neutralModulators()],
    ] as const) {
      const modulators = modulatorsFromSensors(now, previous);
      for (const key of keys) {
        expect(modulators[key]).toBeGreaterThanOrEqual(0);
        expect(modulators[key]).toBeLessThanOrEqual(1);
      }
    }
  });

  it("is all zero for zero sensors from a neutral start", () => {
    expect(modulatorsFromSensors(zero(), neutralModulators())).toEqual(neutralModulators());
  });

  it("blends half the previous value with half the new one", () => {
    const previous: Modulators = { arousal: 0.8, time_pressure: 0.4, social_risk: 0.6, uncertainty: 1 };
    const modulators = modulatorsFromSensors(
      sensors({ vulnerability: 0.2, safety_risk: 0.4, advice_requested: 0.5, relational_bid: 0.5, ambiguity: 0 }),
      previous,
    );
    expect(modulators.arousal).toBeCloseTo(0.5 * 0.8 + 0.5 * 0.4);
    expect(modulators.time_pressure).toBeCloseTo(0.5 * 0.4 + 0.5 * 0.5 * 0.6);
    expect(modulators.social_risk).toBeCloseTo(0.5 * 0.6 + 0.5 * 0.5 * 0.8);
    expect(modulators.uncertainty).toBeCloseTo(0.5);
  });

  it("decays towards zero when the sensors go quiet", () => {
    let modulators: Modulators = { arousal: 1, time_pressure: 1, social_risk: 1, uncertainty: 1 };
    const first = modulatorsFromSensors(zero(), modulators);
    modulators = modulatorsFromSensors(zero(), first);
    for (const key of keys) {
      expect(first[key]).toBeCloseTo(0.5);
      expect(modulators[key]).toBeCloseTo(0.25);
    }
  });

  it("raises arousal from vulnerability, safety risk or rupture, whichever is highest", () => {
    for (const name of ["vulnerability", "safety_risk", "rupture"] as const) {
      expect(modulatorsFromSensors(sensors({ [name]: 0.8 }), neutralModulators()).arousal, name).toBeCloseTo(0.4);
    }
    expect(
      modulatorsFromSensors(sensors({ vulnerability: 0.2, safety_risk: 1, rupture: 0.4 }), neutralModulators()).arousal,
    ).toBeCloseTo(0.5);
  });

  it("does not mutate the previous modulators", () => {
    const previous = Object.freeze({ arousal: 0.3, time_pressure: 0.2, social_risk: 0.1, uncertainty: 0.9 });
    const next = modulatorsFromSensors(sensors({ rupture: 1 }), previous);
    expect(previous).toEqual({ arousal: 0.3, time_pressure: 0.2, social_risk: 0.1, uncertainty: 0.9 });
    expect(next).not.toBe(previous);
  });
});
