/**
 * Adaptive zones and the arena's entry limit, pure: a zone that loses items to its cap three turns
 * running grows its cap (to at most twice its share) and gives it back once its demand fits; the
 * planner keeps more of a grown zone and never more than the budget; the entry limit leaves the
 * least important items out, never the message.
 */
import { describe, expect, it } from "vitest";
import {
  adaptedShares,
  adaptZones,
  CAP_STEP,
  MAX_CAP_FACTOR,
  noAdaptation,
  RELAXED_TURNS,
  STARVED_TURNS,
  type ZoneOutcome,
} from "../../src/context/adaptiveZones.ts";
import { planTurnContext } from "../../src/context/arena.ts";
import { DEFAULT_CONTEXT_BUDGET } from "../../src/context/budget.ts";
import { planContext } from "../../src/context/planner.ts";
import { tokenizerFor } from "../../src/context/tokenizer.ts";
import { ZONE_SHARES } from "../../src/context/zones.ts";
import type { ContextArenaState, ZoneAdaptationChange } from "../../src/contracts/context.ts";
import { agentContext, ledgers, sentences } from "./contexts.ts";

const tokenizer = tokenizerFor("gpt-4o");
const TOTAL = 2_000;
const budget = { ...DEFAULT_CONTEXT_BUDGET, total_tokens: TOTAL };
/** A share as the adaptation rounds it (4 places). */
const share = (value: number) => Math.round(value * 10_000) / 10_000;
const truthCapped: ZoneOutcome = { zone: "truth", capped: true, demand_tokens: 400 };
const truthFits: ZoneOutcome = { zone: "truth", capped: false, demand_tokens: 50 };

/** The adaptation after `outcomes`, one turn each, from none. */
function adaptedAfter(outcomes: ZoneOutcome[][]) {
  let adaptation = noAdaptation();
  const changes = [];
  for (const turn of outcomes) {
    const next = adaptZones(adaptation, turn, TOTAL);
    adaptation = next.adaptation;
    changes.push(...next.changes);
  }
  return { adaptation, changes };
}

describe("adaptive zones", () => {
  it("grow a zone's cap after it lost items to it three turns running, one step at a time", () => {
    const two = adaptedAfter(Array.from({ length: STARVED_TURNS - 1 }, () => [truthCapped]));
    expect(two.changes).toEqual([]);
    expect(two.adaptation.starved).toEqual({ truth: STARVED_TURNS - 1 });
    const three = adaptedAfter(Array.from({ length: STARVED_TURNS }, () => [truthCapped]));
    const grown = share(ZONE_SHARES.truth.cap + CAP_STEP);
    expect(three.changes).toEqual([
      { zone: "truth", from_share: ZONE_SHARES.truth.cap, to_share: grown, reason: "starved", turns: STARVED_TURNS },
    ]);
    expect(three.adaptation).toEqual({ caps: { truth: grown }, starved: {}, relaxed: {} });
    // A turn that fits breaks the streak.
    expect(adaptedAfter([[truthCapped], [truthCapped], [truthFits], [truthCapped]]).changes).toEqual([]);
  });

  it("grow a cap to at most twice its share", () => {
    const { adaptation } = adaptedAfter(Array.from({ length: 60 * STARVED_TURNS }, () => [truthCapped]));
    expect(adaptation.caps.truth).toBeCloseTo(ZONE_SHARES.truth.cap * MAX_CAP_FACTOR);
  });

  it("give a grown cap back, step by step, once the zone's demand fits its usual cap again", () => {
    const starving = Array.from({ length: 2 * STARVED_TURNS }, () => [truthCapped]);
    const grown = adaptedAfter(starving).adaptation.caps.truth!;
    expect(grown).toBeCloseTo(ZONE_SHARES.truth.cap + 2 * CAP_STEP);
    // Demand above the usual cap but within the grown one: held.
    const held = adaptedAfter([
      ...starving,
      ...Array.from({ length: 5 }, () => [{ ...truthFits, demand_tokens: 210 }]),
    ]);
    expect(held.adaptation.caps.truth).toBe(grown);
    const relaxing = adaptedAfter([...starving, ...Array.from({ length: RELAXED_TURNS }, () => [truthFits])]);
    expect(relaxing.changes.at(-1)).toMatchObject({
      zone: "truth",
      reason: "relaxed",
      to_share: share(grown - CAP_STEP),
    });
    const back = adaptedAfter([...starving, ...Array.from({ length: 2 * RELAXED_TURNS }, () => [truthFits])]);
    expect(back.adaptation).toEqual(noAdaptation());
  });

  it("let the planner keep more of a grown zone, within the budget", () => {
    const sources = { context: agentContext({ ledgers: ledgers(sentences("fact", 30), []) }) };
    const usual = planContext(sources, { budget, tokenizer });
    const shares = adaptedShares({ caps: { truth: ZONE_SHARES.truth.cap * 2 }, starved: {}, relaxed: {} });
    const grown = planContext(sources, { budget, tokenizer, zone_shares: shares });
    expect(grown.report.zones.truth.cap).toBe(2 * usual.report.zones.truth.cap);
    expect(grown.report.zones.truth.kept.length).toBeGreaterThan(usual.report.zones.truth.kept.length);
    expect(grown.report.planned_tokens).toBeLessThanOrEqual(grown.report.target_tokens);
  });

  it("carry the adaptation from turn to turn in the arena, and name each move", () => {
    const context = agentContext({ ledgers: ledgers(sentences("fact", 30), []) });
    let state: ContextArenaState | undefined;
    const moves: ZoneAdaptationChange[] = [];
    for (let turn = 1; turn <= STARVED_TURNS; turn++) {
      const planned = planTurnContext(state, context, { budget }, { turn_id: turn });
      state = planned.state;
      if (planned.adapted) moves.push(...planned.adapted.changes);
      // The plan records the adaptation after it: what a replay reads.
      expect(planned.planned.adaptation).toEqual(state.zones);
    }
    expect(moves).toEqual([expect.objectContaining({ zone: "truth", reason: "starved" })]);
    // Off: nothing moves and nothing is recorded.
    const off = planTurnContext(state, context, { budget, adaptive_zones: false }, { turn_id: 9 });
    expect(off.adapted).toBeNull();
    expect(off.state.zones).toBeUndefined();
  });
});

describe("the arena's entry limit", () => {
  it("leaves the least important items out past it, from the last zone, and never the message", () => {
    const sources = { context: agentContext({ ledgers: ledgers(sentences("fact", 4), ["water the roses"]) }) };
    const free = planContext(sources, { budget, tokenizer });
    const kept = (report: typeof free.report) => Object.values(report.zones).flatMap((zone) => zone.kept);
    const limited = planContext(sources, { budget, tokenizer, max_entries: 3 });
    // The message is pinned; of the rest, the first items of the first zones stay, the last zones' go first.
    expect(kept(free.report)).toEqual([
      "stance",
      "fact:0",
      "fact:1",
      "fact:2",
      "fact:3",
      "user_message",
      "goal",
      "item:0",
      "signals",
    ]);
    expect(kept(limited.report)).toEqual(["stance", "fact:0", "user_message"]);
    expect(limited.report.entries_limited).toEqual({
      max_entries: 3,
      dropped: ["signals", "item:0", "goal", "fact:3", "fact:2", "fact:1"],
    });
    expect(limited.report.zones.truth.dropped).toEqual(["fact:3", "fact:2", "fact:1"]);
    expect(planContext(sources, { budget, tokenizer, max_entries: 1 }).report.zones.task_state.kept).toEqual([
      "user_message",
    ]);
  });
});
