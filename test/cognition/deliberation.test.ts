import { describe, expect, it } from "vitest";
import { quietOutput, reviseByMajority } from "../../src/agents/defineAgent.ts";
import {
  CONSENSUS_THRESHOLD,
  computeConsensus,
  contestedClaims,
  MAX_DELIBERATION_ROUNDS,
  stakeholders,
} from "../../src/cognition/deliberation.ts";
import { applyAgentOutput, type Workspace } from "../../src/cognition/workspace.ts";
import { type AgentContext, Contribution } from "../../src/contracts/agent.ts";
import {
  type Claim,
  neutralModulators,
  neutralStance,
  SENSOR_NAMES,
  type Sensors,
} from "../../src/contracts/workspace.ts";

const claim = (id: string, confidence: number, support: string[], opposition: string[] = []): Claim => ({
  id,
  text: `claim ${id}`,
  source: support[0] ?? "agent.unknown",
  confidence,
  support,
  opposition,
});

describe("constants", () => {
  it("has a consensus threshold in (0, 1] and at least one round", () => {
    expect(CONSENSUS_THRESHOLD).toBeGreaterThan(0);
    expect(CONSENSUS_THRESHOLD).toBeLessThanOrEqual(1);
    expect(Number.isInteger(MAX_DELIBERATION_ROUNDS)).toBe(true);
    expect(MAX_DELIBERATION_ROUNDS).toBeGreaterThanOrEqual(1);
  });
});

describe("computeConsensus", () => {
  it("is 1 with no claims", () => {
    expect(computeConsensus([])).toBe(1);
  });

  it("is 1 when no claim is contested", () => {
    expect(computeConsensus([claim("a", 0.9, ["x.a"]), claim("b", 0.4, ["x.b", "x.c"])])).toBe(1);
  });

  it("is 1 when claims have no stances at all", () => {
    expect(computeConsensus([claim("a", 0.9, [])])).toBe(1);
  });

  it("is the share of supporting stances on a single contested claim", () => {
    expect(computeConsensus([claim("a", 0.5, ["x.a", "x.b", "x.c"], ["x.d"])])).toBe(0.75);
    expect(computeConsensus([claim("a", 0.5, [], ["x.d"])])).toBe(0);
  });

  it("weights each claim's stances by its confidence", () => {
    // Claim a: 0.8 * 2 support, 0.8 * 1 opposition; claim b: 0.5 * 1 opposition.
    // agreeing = 1.6, total = 2.4 + 0.5 = 2.9 → 0.552
    const claims = [claim("a", 0.8, ["x.a", "x.b"], ["x.c"]), claim("b", 0.5, [], ["x.a"])];
    expect(computeConsensus(claims)).toBeCloseTo(1.6 / 2.9, 3);
    // The same stances with equal confidences would give 2 / 4.
    const equal = [claim("a", 0.5, ["x.a", "x.b"], ["x.c"]), claim("b", 0.5, [], ["x.a"])];
    expect(computeConsensus(equal)).toBe(0.5);
  });

  it("gives more weight to a confident opposed claim than to a tentative one", () => {
    const supported = claim("a", 0.6, ["x.a", "x.b"]);
    const confidentOpposed = computeConsensus([supported, claim("b", 0.9, [], ["x.c", "x.d"])]);
    const tentativeOpposed = computeConsensus([supported, claim("b", 0.1, [], ["x.c", "x.d"])]);
    expect(confidentOpposed).toBeLessThan(tentativeOpposed);
  });

  it("stays within [0, 1]", () => {
    const claims = [claim("a", 1, ["x.a"], ["x.b", "x.c", "x.d"]), claim("b", 0.2, ["x.a"], ["x.b"])];
    const consensus = computeConsensus(claims);
    expect(consensus).toBeGreaterThanOrEqual(0);
    expect(consensus).toBeLessThanOrEqual(1);
  });
});

const zeroSensors = (): Sensors => Object.fromEntries(SENSOR_NAMES.map((name) => [name, 0])) as Sensors;

const contextWith = (claims: Claim[], overrides: Partial<AgentContext> = {}): AgentContext => ({
  user_message: "hello",
  sensors: zeroSensors(),
  modulators: neutralModulators(),
  stance: neutralStance(),
  claims,
  episodes: [],
  ...overrides,
});

/** A claim authored by `source`, who supports it, plus the given others. */
const authored = (id: string, source: string, support: string[] = [], opposition: string[] = []): Claim => ({
  id,
  text: `claim ${id}`,
  source,
  confidence: 0.7,
  support: [source, ...support],
  opposition,
});

/** One deliberation round of the offline model: every stakeholder revises itself by majority. */
const deliberationRound = (claims: Claim[]): Claim[] => {
  let workspace: Workspace = { claims, stance: neutralStance(), modulators: neutralModulators(), proposals: [] };
  for (const agent of stakeholders(claims)) {
    workspace = applyAgentOutput(workspace, agent, reviseByMajority(contextWith(workspace.claims), agent));
  }
  return workspace.claims;
};

describe("contestedClaims", () => {
  it("returns the claims someone opposes, in their order", () => {
    const claims = [
      authored("quiet", "x.a", ["x.b"]),
      authored("first", "x.a", [], ["x.c"]),
      authored("lonely", "x.b"),
      authored("second", "x.c", ["x.a"], ["x.b", "x.d"]),
    ];
    expect(contestedClaims(claims).map((c) => c.id)).toEqual(["first", "second"]);
  });

  it("counts a claim nobody supports but someone opposes as contested", () => {
    const orphan = claim("orphan", 0.5, [], ["x.b"]);
    expect(contestedClaims([orphan])).toEqual([orphan]);
  });

  it("is empty without opposition", () => {
    expect(contestedClaims([])).toEqual([]);
    expect(contestedClaims([authored("a", "x.a", ["x.b", "x.c"])])).toEqual([]);
  });

  it("does not mutate its input", () => {
    const claims = [authored("a", "x.a", [], ["x.b"]), authored("b", "x.b")];
    const before = structuredClone(claims);
    contestedClaims(claims);
    expect(claims).toEqual(before);
  });
});

describe("stakeholders", () => {
  it("names the authors and opponents of contested claims, each once, sorted", () => {
    const claims = [
      authored("a", "social.rapport", ["emotion.stress"], ["reasoning.skeptic"]),
      authored("b", "emotion.wellbeing", [], ["reasoning.skeptic", "inhibition.censor"]),
      authored("c", "planning.next_step", ["monitoring.trigger_watcher"]),
    ];
    expect(stakeholders(claims)).toEqual([
      "emotion.wellbeing",
      "inhibition.censor",
      "reasoning.skeptic",
      "social.rapport",
    ]);
  });

  it("leaves out mere supporters and the authors of uncontested claims", () => {
    const claims = [authored("a", "x.author", ["x.fan"], ["x.critic"]), authored("b", "x.bystander", ["x.fan"])];
    const agents = stakeholders(claims);
    expect(agents).not.toContain("x.fan");
    expect(agents).not.toContain("x.bystander");
    expect(agents).toEqual(["x.author", "x.critic"]);
  });

  it("names an agent that both authors one contested claim and opposes another once", () => {
    const claims = [authored("a", "x.one", [], ["x.two"]), authored("b", "x.two", [], ["x.one"])];
    expect(stakeholders(claims)).toEqual(["x.one", "x.two"]);
  });

  it("is empty when nothing is contested", () => {
    expect(stakeholders([])).toEqual([]);
    expect(stakeholders([authored("a", "x.a", ["x.b"])])).toEqual([]);
  });
});

describe("reviseByMajority", () => {
  it("withdraws the agent's own claims that more agents oppose than support", () => {
    const claims = [
      authored("outvoted", "x.me", [], ["x.b", "x.c"]),
      authored("tied", "x.me", [], ["x.b"]),
      authored("backed", "x.me", ["x.d"], ["x.b"]),
      authored("theirs", "x.other", [], ["x.b", "x.c"]),
    ];
    const output = reviseByMajority(contextWith(claims), "x.me");
    expect(output.withdraws).toEqual(["outvoted"]);
  });

  it("concedes claims it opposes that at least twice as many agents support", () => {
    const claims = [
      authored("two_to_one", "x.a", ["x.b"], ["x.me"]),
      authored("one_to_one", "x.a", [], ["x.me"]),
      authored("three_to_two", "x.a", ["x.b", "x.c"], ["x.me", "x.d"]),
      authored("four_to_two", "x.a", ["x.b", "x.c", "x.e"], ["x.me", "x.d"]),
      authored("not_mine", "x.a", ["x.b", "x.c"], ["x.d"]),
    ];
    const output = reviseByMajority(contextWith(claims), "x.me");
    expect(output.concedes).toEqual(["two_to_one", "four_to_two"]);
  });

  it("says nothing else: no claims, stances, proposals or stance change", () => {
    const claims = [authored("mine", "x.me", [], ["x.b", "x.c"]), authored("theirs", "x.a", ["x.b"], ["x.me"])];
    const output = reviseByMajority(contextWith(claims), "x.me");
    expect(output).toEqual({ ...quietOutput(), withdraws: ["mine"], concedes: ["theirs"] });
    expect(Contribution.safeParse(output).success).toBe(true);
  });

  it("is quiet for an agent with no stake in the contested claims", () => {
    const claims = [authored("a", "x.a", [], ["x.b", "x.c"]), authored("b", "x.b", ["x.c"], ["x.a"])];
    expect(reviseByMajority(contextWith(claims), "x.bystander")).toEqual(quietOutput());
  });

  it("does not mutate the context", () => {
    const claims = [authored("a", "x.me", [], ["x.b", "x.c"])];
    const context = contextWith(claims);
    const before = structuredClone(context);
    reviseByMajority(context, "x.me");
    expect(context).toEqual(before);
  });
});

describe("a deliberation round of stakeholders revising by majority", () => {
  it("withdraws an outvoted claim and reaches full consensus", () => {
    const claims = [authored("ok", "x.a", ["x.b"]), authored("bad", "x.a", [], ["x.b", "x.c"])];
    expect(computeConsensus(claims)).toBeLessThan(CONSENSUS_THRESHOLD);
    const revised = deliberationRound(claims);
    expect(revised.map((c) => c.id)).toEqual(["ok"]);
    expect(computeConsensus(revised)).toBe(1);
  });

  it("drops the opposition of an agent outnumbered two to one", () => {
    const claims = [authored("popular", "x.a", ["x.b"], ["x.c"])];
    const [revised] = deliberationRound(claims);
    expect(revised?.support).toEqual(["x.a", "x.b"]);
    expect(revised?.opposition).toEqual([]);
  });

  it("leaves a one-to-one dispute standing", () => {
    const claims = [authored("tie", "x.a", [], ["x.b"])];
    expect(deliberationRound(claims)).toEqual(claims);
  });

  it("does not decrease consensus", () => {
    const workspaces: Claim[][] = [
      [authored("ok", "x.a", ["x.b"]), authored("bad", "x.a", [], ["x.b", "x.c"])],
      [authored("mostly", "x.a", ["x.b", "x.c"], ["x.d"]), authored("bad", "x.e", [], ["x.a", "x.b"])],
      [
        authored("strong", "x.a", ["x.b", "x.c", "x.d", "x.e"], ["x.f"]),
        authored("tie", "x.a", [], ["x.b"]),
        authored("bad", "x.g", [], ["x.b", "x.c", "x.d"]),
      ],
    ];
    for (const claims of workspaces) {
      expect(computeConsensus(deliberationRound(claims))).toBeGreaterThanOrEqual(computeConsensus(claims));
    }
  });

  it("reaches the consensus threshold within the allowed rounds for a simple dispute", () => {
    let claims: Claim[] = [
      authored("ok", "x.a", ["x.b"]),
      authored("bad", "x.c", [], ["x.a", "x.b"]),
      authored("popular", "x.b", ["x.c"], ["x.d"]),
    ];
    let rounds = 0;
    while (computeConsensus(claims) < CONSENSUS_THRESHOLD && rounds < MAX_DELIBERATION_ROUNDS) {
      claims = deliberationRound(claims);
      rounds++;
    }
    expect(rounds).toBeGreaterThan(0);
    expect(computeConsensus(claims)).toBeGreaterThanOrEqual(CONSENSUS_THRESHOLD);
  });
});
