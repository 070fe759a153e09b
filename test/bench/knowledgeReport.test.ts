/**
 * The pure parts of the bench's knowledge section (issue 39): its plan, its three targets judged on
 * a run (met, missed, or not measured with the reason), and the section it writes. The bench
 * itself is not run here.
 */
import { describe, expect, it } from "vitest";
import {
  KNOWLEDGE_MARKERS,
  type KnowledgeRun,
  knowledgePlan,
  knowledgeTargets,
  renderKnowledge,
} from "../../bench/knowledgeReport.ts";
import { summarize } from "../../bench/stats.ts";

function run(over: Partial<KnowledgeRun> = {}): KnowledgeRun {
  return {
    plan: { chunks: 10_000, queries: 200 },
    quality: [
      {
        embedder: "offline-terms:512",
        described: "the offline embedder",
        chunks: 634,
        questions: 50,
        recallAt5: 0.9,
        mrr: 0.7,
        missed: [{ id: "fork", rank: null }],
        indexMs: 900,
      },
      { embedder: "openai:hashed-bag-of-words@1536", described: "the suite's server", error: "connection refused" },
    ],
    scale: { chunks: 10_000, embedder: "offline-terms:512", indexPerS: 150, search: summarize([2, 3, 4, 30]) },
    durationS: 20,
    ...over,
  };
}

const byId = (targets: ReturnType<typeof knowledgeTargets>) => new Map(targets.map((t) => [t.id, t]));

describe("the knowledge section's targets", () => {
  it("judges search p95, indexing and offline recall against issue 39's goals", () => {
    const targets = byId(knowledgeTargets(run()));
    expect(targets.get("knowledge-search-p95")).toMatchObject({ measured: 30, goal: 20, met: false });
    expect(targets.get("knowledge-indexing")).toMatchObject({ measured: 150, goal: 200, met: false });
    expect(targets.get("knowledge-recall")).toMatchObject({ measured: 0.9, goal: 0.8, met: true });
    expect(targets.get("knowledge-recall")?.detail).toContain("MRR 0.7");
  });

  it("a failed part, or a smaller collection than the target's, is not measured, with the reason", () => {
    const failed = byId(knowledgeTargets(run({ scale: { error: "nats-server not found" }, quality: [] })));
    expect(failed.get("knowledge-search-p95")?.notMeasured).toContain("nats-server not found");
    expect(failed.get("knowledge-indexing")?.notMeasured).toContain("nats-server not found");
    expect(failed.get("knowledge-recall")?.notMeasured).toBe("no offline quality run");
    const small = run({
      scale: { chunks: 500, embedder: "offline-terms:512", indexPerS: 900, search: summarize([1]) },
    });
    expect(byId(knowledgeTargets(small)).get("knowledge-search-p95")?.notMeasured).toContain("only 500 chunks");
  });
});

describe("the knowledge section", () => {
  it("sits between its markers, says the suite's server is not a trained model, and shows failures", () => {
    const section = renderKnowledge(run(), "header line");
    expect(section.startsWith(KNOWLEDGE_MARKERS[0])).toBe(true);
    expect(section.endsWith(KNOWLEDGE_MARKERS[1])).toBe(true);
    expect(section).toContain("**not a trained model**");
    expect(section).toContain("header line");
    expect(section).toContain(
      "| `offline-terms:512` | the offline embedder | 634 | 50 | 0.900 | 0.700 | fork (> 10) |",
    );
    expect(section).toContain("failed: connection refused");
    expect(renderKnowledge(undefined)).toContain("Not in this run");
  });

  it("plans 10 000 chunks unless BENCH_KNOWLEDGE_CHUNKS says otherwise, fewer searches when quick", () => {
    expect(knowledgePlan(false, {})).toEqual({ chunks: 10_000, queries: 200 });
    expect(knowledgePlan(true, { BENCH_KNOWLEDGE_CHUNKS: "2000" })).toEqual({ chunks: 2_000, queries: 50 });
    expect(() => knowledgePlan(false, { BENCH_KNOWLEDGE_CHUNKS: "lots" })).toThrow(/BENCH_KNOWLEDGE_CHUNKS/);
  });
});
