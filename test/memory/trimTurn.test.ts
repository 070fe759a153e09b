/** What a trim of a session's turn removes from its memory graph, pure: the turn's nodes, and what memory derived from them. */
import { describe, expect, it } from "vitest";
import { trimmedNodes } from "../../src/memory/graph/trimTurn.ts";

const node = (id: string, data: Record<string, unknown>) => ({ id, data });

describe("a trim of turn 1", () => {
  it("removes the turn's episode and facts, an earlier value a fact kept from it, and the insights naming them", () => {
    const nodes = [
      node("episode.1", { turn_id: 1 }),
      node("episode.2", { turn_id: 2 }),
      node("fact.home", { fact: true, updated_turn: 2 }),
      node("fact.pet", { fact: true, updated_turn: 1 }),
      // Turn 2 changed home: the value turn 1 gave is kept, with its text.
      node("prior.fact.home.2", { prior: true, updated_turn: 2, source_turn: 1 }),
      node("prior.fact.job.3", { prior: true, updated_turn: 3, source_turn: 2 }),
      node("insight.fact_evolved.a", { insight: true, evidence: ["fact.home", "prior.fact.home.2"], turns: [2] }),
      node("insight.recurring_topic.b", { insight: true, evidence: ["episode.1"], turns: [1, 2, 3] }),
      node("insight.stale_thread.c", { insight: true, evidence: ["thread.x"], turns: [3] }),
    ];
    expect(trimmedNodes(nodes, 1).map((trimmed) => trimmed.id)).toEqual([
      "episode.1",
      "fact.pet",
      "prior.fact.home.2",
      "insight.fact_evolved.a",
      "insight.recurring_topic.b",
    ]);
  });
});
