/**
 * The `rag_external` zone and its gating: passages shown last, with their citations; irrelevant
 * hits left out; what does not fit the zone's cap or the budget left out, best kept; nothing asked
 * at critical pressure.
 */
import { describe, expect, it } from "vitest";
import { DEFAULT_CONTEXT_BUDGET } from "../../src/context/budget.ts";
import { planContext } from "../../src/context/planner.ts";
import { gatePassages, MIN_PASSAGE_SCORE, ragExternalPermitted } from "../../src/context/ragExternal.ts";
import { tokenizerFor } from "../../src/context/tokenizer.ts";
import { ZONE_TITLES } from "../../src/context/zones.ts";
import type { KnowledgeHit } from "../../src/contracts/knowledge.ts";
import { agentContext, episode, sentences } from "./contexts.ts";

const tokenizer = tokenizerFor("gpt-4o");
const policy = { budget: { ...DEFAULT_CONTEXT_BUDGET, total_tokens: 2_000 }, model: "gpt-4o" };

const hit = (n: number, score: number, words = 20): KnowledgeHit => ({
  collection: "handbook",
  document: `doc-${n}.md`,
  doc_id: `id${n}`,
  chunk: n,
  offset: n * 100,
  heading: `Guide > Part ${n}`,
  text: `Passage ${n}: ${"the snapshot runs nightly and keeps copies ".repeat(Math.ceil(words / 7)).trim()}.`,
  score,
});

describe("the rag_external zone", () => {
  it("shows the passages last, each with its citation and heading", () => {
    const context = agentContext({
      user_facts: ["likes roses"],
      knowledge: [
        { collection: "handbook", document: "ops.md", chunk: 2, offset: 84, text: "Backups run at 02:17.", score: 0.8 },
      ],
    });
    const { text, report } = planContext({ context }, { budget: policy.budget, tokenizer });
    const headings = [...text.matchAll(/^## (.+)$/gm)].map((match) => match[1]);
    expect(headings.at(-1)).toBe(ZONE_TITLES.rag_external);
    expect(text).toContain("- [handbook/ops.md@84] Backups run at 02:17.");
    expect(report.zones.rag_external.kept).toEqual(["passage:0"]);
  });
});

describe("the rag_external gating", () => {
  it("leaves out hits below the relevance threshold, and keeps the rest best first, without doc ids", () => {
    const gated = gatePassages(agentContext(), [hit(1, 0.2), hit(2, MIN_PASSAGE_SCORE / 2), hit(3, 0.6)], policy);
    expect(gated.passages.map((passage) => passage.document)).toEqual(["doc-3.md", "doc-1.md"]);
    expect(gated.passages[0]).not.toHaveProperty("doc_id");
    expect(gated).toMatchObject({ irrelevant: 1, overBudget: 0 });
  });

  it("keeps what fits the zone's cap, the best first", () => {
    // 0.15 of 2,000 tokens: 300 for the zone; each passage takes about 70.
    const hits = [1, 2, 3, 4, 5, 6, 7, 8].map((n) => hit(n, 1 - n / 10, 50));
    const gated = gatePassages(agentContext(), hits, policy);
    expect(gated.passages.length).toBeGreaterThan(0);
    expect(gated.overBudget).toBeGreaterThan(0);
    expect(gated.passages.map((passage) => passage.chunk)).toEqual(
      [1, 2, 3, 4, 5, 6, 7, 8].slice(0, gated.passages.length),
    );
  });

  it("asks nothing at critical pressure: the zone would be the first given up", () => {
    // A long conversation and many recalled facts press the context past the critical ratio.
    const crowded = agentContext({
      episodes: Array.from({ length: 30 }, (_, index) => episode(index + 1, 40)),
      user_facts: sentences("user fact", 30),
    });
    expect(ragExternalPermitted(crowded, policy)).toBe(false);
    expect(ragExternalPermitted(agentContext(), policy)).toBe(true);
  });
});
