import { describe, expect, it } from "vitest";
import {
  CONSENSUS_THRESHOLD,
  computeConsensus,
  MAX_DELIBERATION_ROUNDS,
  reviseClaims,
} from "../../src/cognition/deliberation.ts";
import type { Claim } from "../../src/contracts/workspace.ts";

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

describe("reviseClaims", () => {
  it("withdraws claims opposed by more agents than support them", () => {
    const revised = reviseClaims([
      claim("kept", 0.7, ["x.a"]),
      claim("gone", 0.9, ["x.a"], ["x.b", "x.c"]),
      claim("unsupported", 0.9, [], ["x.b"]),
    ]);
    expect(revised.map((c) => c.id)).toEqual(["kept"]);
  });

  it("keeps a tied claim but lowers its confidence in proportion to its opposition", () => {
    const [tied] = reviseClaims([claim("tie", 0.8, ["x.a"], ["x.b"])]);
    expect(tied?.id).toBe("tie");
    expect(tied?.confidence).toBeCloseTo(0.4);
  });

  it("lowers the confidence of a contested claim that keeps a majority", () => {
    const [contested] = reviseClaims([claim("c", 0.9, ["x.a", "x.b", "x.c"], ["x.d"])]);
    // Opposition share 1/4: 0.9 * 0.75
    expect(contested?.confidence).toBeCloseTo(0.675);
    expect(contested?.support).toEqual(["x.a", "x.b", "x.c"]);
    expect(contested?.opposition).toEqual(["x.d"]);
  });

  it("leaves uncontested claims unchanged", () => {
    const original = claim("u", 0.6, ["x.a", "x.b"]);
    const [revised] = reviseClaims([original]);
    expect(revised).toEqual(original);
  });

  it("does not mutate its input", () => {
    const claims = [claim("a", 0.9, ["x.a", "x.b"], ["x.c"]), claim("b", 0.5, [], ["x.a"])];
    const before = structuredClone(claims);
    reviseClaims(claims);
    expect(claims).toEqual(before);
  });

  it("does not decrease consensus for a workspace with a majority-opposed claim", () => {
    const workspaces: Claim[][] = [
      [claim("ok", 0.8, ["x.a", "x.b"]), claim("bad", 0.9, ["x.a"], ["x.b", "x.c"])],
      [claim("mostly", 1, ["x.a", "x.b", "x.c"], ["x.d"]), claim("bad", 0.6, [], ["x.a", "x.b"])],
      [
        claim("strong", 1, ["x.a", "x.b", "x.c", "x.d", "x.e"], ["x.f"]),
        claim("tie", 0.7, ["x.a"], ["x.b"]),
        claim("bad", 0.05, ["x.a"], ["x.b", "x.c", "x.d"]),
      ],
    ];
    for (const claims of workspaces) {
      const before = computeConsensus(claims);
      const after = computeConsensus(reviseClaims(claims));
      expect(after).toBeGreaterThanOrEqual(before);
    }
    // The first workspace is fully agreed once the opposed claim is withdrawn.
    expect(computeConsensus(reviseClaims(workspaces[0]!))).toBe(1);
  });

  it("reaches the consensus threshold within the allowed rounds for a simple dispute", () => {
    let claims: Claim[] = [claim("ok", 0.8, ["x.a", "x.b"]), claim("bad", 0.9, ["x.a"], ["x.b", "x.c"])];
    let rounds = 0;
    while (computeConsensus(claims) < CONSENSUS_THRESHOLD && rounds < MAX_DELIBERATION_ROUNDS) {
      claims = reviseClaims(claims);
      rounds++;
    }
    expect(computeConsensus(claims)).toBeGreaterThanOrEqual(CONSENSUS_THRESHOLD);
  });
});
