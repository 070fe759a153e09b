import { describe, expect, it } from "vitest";
import { DEFAULT_CONTEXT_BUDGET } from "../../src/context/budget.ts";
import { planContext } from "../../src/context/planner.ts";
import { tokenizerFor } from "../../src/context/tokenizer.ts";
import { ZONE_TITLES, ZONES } from "../../src/context/zones.ts";
import { agentContext, episode, ledgers, sentences } from "./contexts.ts";

const tokenizer = tokenizerFor("gpt-4o");
const budget = { ...DEFAULT_CONTEXT_BUDGET, total_tokens: 2_000 };

/** A context with something in every zone, more than some zones' caps hold. */
const sources = () => ({
  context: agentContext({
    procedures: ["Keep answers short"],
    ledgers: ledgers(sentences("fact", 12), ["buy seeds", "fix the fence"]),
    episodes: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map((turn) => episode(turn, 30)),
    open_threads: ["the fence repair", "the neighbour's tree"],
    user_facts: sentences("user fact", 25),
    claims: sentences("claim", 4, 12).map((text, index) => ({
      id: `c${index}`,
      text,
      source: "reasoning.planner",
      confidence: 0.5 + index / 10,
      support: [],
      opposition: [],
    })),
  }),
  summary: { through_turn: 2, text: "T1: the user wants a garden. T2: roses were discussed." },
  tool_failures: ["web.search: timed out"],
});

const range = (from: number, to: number, label: string) =>
  Array.from({ length: to - from + 1 }, (_, index) => `${label}:${from + index}`);

describe("context planner", () => {
  it("shows the zones as sections in the fixed order, not as JSON", () => {
    const { text, report } = planContext(sources(), { budget, tokenizer });
    const headings = [...text.matchAll(/^## (.+)$/gm)].map((match) => match[1]);
    // Every zone that holds something (this context names no knowledge collection and has no supplement).
    expect(headings).toEqual(
      ZONES.filter((zone) => zone !== "rag_external" && zone !== "supplemental").map((zone) => ZONE_TITLES[zone]),
    );
    expect(text).toContain("- The user says: What should I plant first this spring?");
    expect(text).not.toContain('{"');
    expect(report.planned_tokens).toBe(tokenizer.count(text));
    // With the ten turns in full and the other zones as capped, the context passes 0.8 of the budget: compaction is due.
    expect(report.pressure.level).toBe("compact");
  });

  it("keeps each zone under its cap, least important items left out first", () => {
    const { report } = planContext(sources(), { budget, tokenizer });
    for (const zone of ZONES) expect(report.zones[zone].tokens).toBeLessThanOrEqual(report.zones[zone].cap);
    expect(report.zones.truth.dropped).toEqual(["fact:10", "fact:11"]);
    // The oldest turns go first; the summary stays.
    expect(report.zones.working_memory.dropped).toEqual(["episode:4", "episode:3"]);
    expect(report.zones.working_memory.kept[0]).toBe("summary");
    // Turns 1 and 2, which the summary covers, are shown in recall (taken in turn with its facts), not hidden.
    expect(report.zones.recall.kept.slice(0, 4)).toEqual(["user_fact:0", "episode:1", "user_fact:1", "episode:2"]);
    expect(report.zones.recall.dropped).toEqual(range(9, 24, "user_fact"));
    expect(new Set(report.dropped.map((item) => item.reason))).toEqual(new Set(["zone_cap"]));
  });

  it("truncates an item larger than its zone's cap, with a note", () => {
    const huge = "The fence post is loose. ".repeat(200);
    const { text, report } = planContext({ context: agentContext({ user_facts: [huge] }) }, { budget, tokenizer });
    expect(report.truncated).toEqual(["user_fact:0"]);
    expect(report.zones.recall.kept).toEqual(["user_fact:0"]);
    expect(report.zones.recall.tokens).toBeLessThanOrEqual(report.zones.recall.cap);
    expect(text).toContain("[…truncated]");
  });

  it("is deterministic", () => {
    const options = { budget, tokenizer, reserve_tokens: 700 };
    expect(planContext(sources(), options)).toEqual(planContext(sources(), options));
  });

  it("at critical pressure fits the compact ratio: recall is dropped, then the oldest working memory", () => {
    // The system prompt takes 700 tokens: the capped context then presses past the critical ratio,
    // and the zones must fit in 0.8 × 2000 − 700 = 900 tokens.
    const { report } = planContext(sources(), { budget, tokenizer, reserve_tokens: 700 });
    expect(report.pressure.level).toBe("critical");
    expect(report.target_tokens).toBe(900);
    expect(report.planned_tokens).toBeLessThanOrEqual(900);
    const kept = Object.fromEntries(ZONES.map((zone) => [zone, report.zones[zone].kept]));
    const dropped = Object.fromEntries(ZONES.map((zone) => [zone, report.zones[zone].dropped]));
    expect(kept).toEqual({
      identity_persona: ["procedure:0", "stance"],
      truth: range(0, 9, "fact"),
      task_state: [
        "user_message",
        "goal",
        "item:0",
        "item:1",
        "signals",
        "claim:c3",
        "claim:c2",
        "claim:c1",
        "claim:c0",
      ],
      tool_failures: ["tool_failure:0"],
      supplemental: [],
      working_memory: ["summary", "episode:10", "episode:9", "episode:8", "episode:7"],
      recall: [],
      rag_external: [],
    });
    expect(dropped).toEqual({
      identity_persona: [],
      truth: ["fact:10", "fact:11"],
      task_state: [],
      tool_failures: [],
      supplemental: [],
      working_memory: ["episode:4", "episode:3", "thread:1", "thread:0", "episode:5", "episode:6"],
      recall: [
        ...range(9, 24, "user_fact"),
        ...range(2, 8, "user_fact").reverse(),
        "episode:2",
        "user_fact:1",
        "episode:1",
        "user_fact:0",
      ],
      rag_external: [],
    });
    expect(report.floors_relaxed).toBe(false);
  });

  it("goes below a zone's floor only when every zone is down to its floor, and never drops the user's message", () => {
    const { report, text } = planContext(sources(), { budget, tokenizer, reserve_tokens: 1_500 });
    expect(report.planned_tokens).toBeLessThanOrEqual(report.target_tokens);
    expect(report.floors_relaxed).toBe(true);
    const reasons = report.dropped.filter((item) => item.reason !== "zone_cap").map((item) => item.reason);
    const firstBelow = reasons.indexOf("budget_below_floor");
    expect(firstBelow).toBeGreaterThan(0);
    expect(reasons.slice(firstBelow).every((reason) => reason === "budget_below_floor")).toBe(true);
    expect(report.zones.task_state.kept).toContain("user_message");
    expect(text).toContain("The user says:");
  });

  it("truncates the user's message when nothing else is left to give up", () => {
    const small = { ...DEFAULT_CONTEXT_BUDGET, total_tokens: 256 };
    const message = "Please read all of this. ".repeat(300);
    const { report, text } = planContext(
      { context: agentContext({ user_message: message }) },
      { budget: small, tokenizer },
    );
    expect(report.truncated).toContain("user_message");
    expect(report.planned_tokens).toBeLessThanOrEqual(report.target_tokens);
    expect(text).toContain("The user says: Please read all of this.");
  });
});
