import { describe, expect, it } from "vitest";
import { arenaPolicyFromEnv, planTurnContext } from "../../src/context/arena.ts";
import { DEFAULT_CONTEXT_BUDGET } from "../../src/context/budget.ts";
import { planContext } from "../../src/context/planner.ts";
import { tokenizerFor } from "../../src/context/tokenizer.ts";
import { ContextPlannedPayload, emptyArenaState, type RecallMode } from "../../src/contracts/context.ts";
import { agentContext, episode, sentences } from "./contexts.ts";

/**
 * Recall mode (CONCLAVE_RECALL_MODE): `primary` plans the recall zone whatever the pressure; `fallback`
 * skips it at compact or critical pressure, and CONTEXT_PLANNED says so.
 */
const budget = { ...DEFAULT_CONTEXT_BUDGET, total_tokens: 2_000 };
const tokenizer = tokenizerFor(undefined);
const facts = sentences("The user once said", 3, 8);

/** A context whose conversation alone takes `turns` × ~100 tokens, with three recalled facts. */
const pressed = (turns: number) =>
  agentContext({ user_facts: facts, episodes: Array.from({ length: turns }, (_, index) => episode(index + 1, 40)) });

const plan = (turns: number, recall_mode?: RecallMode) =>
  planContext({ context: pressed(turns) }, { budget, tokenizer, ...(recall_mode ? { recall_mode } : {}) });

describe("recall mode", () => {
  it("primary plans recall under pressure; fallback skips it and says why", () => {
    const primary = plan(30);
    expect(primary.report.pressure.level).toBe("critical");
    expect(primary.report.zones.recall.kept).toEqual(["user_fact:0", "user_fact:1", "user_fact:2"]);
    expect(primary.report.recall_skipped).toBeUndefined();

    const fallback = plan(30, "fallback");
    expect(fallback.report.pressure.level).toBe("critical");
    expect(fallback.report.zones.recall.kept).toEqual([]);
    expect(fallback.report.zones.recall.tokens).toBe(0);
    expect(fallback.report.zones.recall.dropped).toEqual(["user_fact:0", "user_fact:1", "user_fact:2"]);
    expect(fallback.report.recall_skipped).toEqual({ mode: "fallback", pressure: "critical", items: 3 });
    expect(fallback.text).not.toContain("The user once said");
    expect(primary.text).toContain("The user once said");
  });

  it("fallback keeps recall while the pressure is normal", () => {
    const calm = plan(1, "fallback");
    expect(calm.report.pressure.level).toBe("normal");
    expect(calm.report.zones.recall.kept).toHaveLength(3);
    expect(calm.report.recall_skipped).toBeUndefined();
  });

  it("at compact pressure too, and the turn's agents are not given the skipped facts", () => {
    // The model reported a prompt between the compact ratio (0.8) and the critical one (0.95); nothing to compact.
    const context = agentContext({ user_facts: facts, episodes: [episode(1, 40)] });
    const arena = { ...emptyArenaState(), observed_tokens: 1_700 };
    const turn = planTurnContext(arena, context, { budget, recall_mode: "fallback" });
    expect(turn.planned.pressure.level).toBe("compact");
    expect(turn.compacted).toBeNull();
    expect(turn.planned.recall_skipped?.mode).toBe("fallback");
    expect(turn.context.user_facts).toEqual([]);
    // The payload is a valid CONTEXT_PLANNED.
    expect(ContextPlannedPayload.parse(turn.planned).recall_skipped).toEqual(turn.planned.recall_skipped);
    const primary = planTurnContext(arena, context, { budget });
    expect(primary.context.user_facts).toEqual(facts);
  });

  it("is read from CONCLAVE_RECALL_MODE (primary by default), a bad value named in one line", () => {
    expect(arenaPolicyFromEnv({}).recall_mode).toBeUndefined();
    expect(arenaPolicyFromEnv({ CONCLAVE_RECALL_MODE: "fallback" }).recall_mode).toBe("fallback");
    expect(arenaPolicyFromEnv({ CONCLAVE_RECALL_MODE: "primary" }).recall_mode).toBeUndefined();
    expect(() => arenaPolicyFromEnv({ CONCLAVE_RECALL_MODE: "sometimes" })).toThrow(
      /CONCLAVE_RECALL_MODE.*must be one of primary, fallback/,
    );
  });
});
