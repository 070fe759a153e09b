/**
 * Insights derived from a session's memory graph (src/memory/learn/insights.ts): pure, so the same
 * graph gives the same insights; a dismissed key is never derived again; a fact's change keeps its
 * earlier value and an `evolves` edge (src/memory/insights.ts, priorValues).
 */
import { describe, expect, it } from "vitest";
import type { MemoryNode } from "../../src/memory/graph/types.ts";
import { priorValues } from "../../src/memory/insights.ts";
import {
  deriveInsights,
  graphMarker,
  insightId,
  RECURRING_TOPIC_TURNS,
  STALE_THREAD_TURNS,
} from "../../src/memory/learn/insights.ts";

const node = (id: string, kind: MemoryNode["kind"], text: string, topics: string[], data: Record<string, unknown>) =>
  ({ id, session_id: "s", kind, text, topics, recurrence: 1, data, created_at: 1, updated_at: 1 }) as MemoryNode;
const episode = (turn: number, topics: string[]) =>
  node(`episode.${turn}`, "episodic", `turn ${turn}`, topics, { turn_id: turn });

describe("deriveInsights", () => {
  it("raises a topic of three turns' episodes, not one of two", () => {
    const nodes = [episode(1, ["work", "night"]), episode(2, ["work"]), episode(3, ["work", "family"])];
    const insights = deriveInsights({ nodes, dismissed: new Set() });
    expect(RECURRING_TOPIC_TURNS).toBe(3);
    expect(insights).toEqual([
      {
        id: insightId("recurring_topic", "topic.work"),
        kind: "recurring_topic",
        key: "topic.work",
        text: '"work" came up in 3 turns',
        evidence: ["episode.1", "episode.2", "episode.3"],
        turns: [1, 2, 3],
      },
    ]);
    // The same graph, the same insights (ids included): derivation is deterministic.
    expect(deriveInsights({ nodes: [...nodes].reverse(), dismissed: new Set() })).toEqual(insights);
  });

  it("never derives a dismissed key again", () => {
    const nodes = [episode(1, ["work"]), episode(2, ["work"]), episode(3, ["work"]), episode(4, ["work"])];
    expect(deriveInsights({ nodes, dismissed: new Set(["topic.work"]) })).toEqual([]);
  });

  it("raises a proposed fact change with both values, and not once it is reviewed", () => {
    const fact = node("fact.work", "semantic", "works days", ["work"], { fact: true, key: "work", updated_turn: 2 });
    const prior = (status: string) =>
      node("prior.fact.work.2", "semantic", "works night shifts", ["work"], {
        prior: true,
        key: "work",
        of: "fact.work",
        status,
        updated_turn: 2,
      });
    const [evolved] = deriveInsights({ nodes: [fact, prior("proposed")], dismissed: new Set() });
    expect(evolved).toMatchObject({
      kind: "fact_evolved",
      key: "evolves.prior.fact.work.2",
      text: 'work: "works night shifts" became "works days"',
      evidence: ["prior.fact.work.2", "fact.work"],
      turns: [2],
    });
    expect(deriveInsights({ nodes: [fact, prior("accepted")], dismissed: new Set() })).toEqual([]);
  });

  it(`raises a thread open for ${STALE_THREAD_TURNS} turns, not a younger or a closed one`, () => {
    const thread = (status: string, opened: number) =>
      node(`thread.t${opened}`, "semantic", `call the bank ${opened}`, [], {
        thread: true,
        status,
        opened_at_turn: opened,
      });
    const nodes = [episode(7, []), thread("open", 2), thread("open", 3), thread("closed", 1)];
    const insights = deriveInsights({ nodes, dismissed: new Set() });
    expect(insights.map((insight) => [insight.kind, insight.text])).toEqual([
      ["stale_thread", "open for 5 turns: call the bank 2"],
    ]);
  });
});

describe("graphMarker", () => {
  it("changes with a node's content, not with its timestamps or the service's runtime-state nodes", () => {
    const nodes = [episode(1, [])];
    const marker = graphMarker(nodes);
    expect(graphMarker([...nodes, node("insight.x", "runtime_state", "x", [], {})])).toBe(marker);
    expect(graphMarker([{ ...episode(1, []), updated_at: 9 }])).toBe(marker);
    expect(graphMarker([...nodes, episode(2, [])])).not.toBe(marker);
    expect(graphMarker([{ ...episode(1, []), text: "changed" }])).not.toBe(marker);
    expect(graphMarker([{ ...episode(1, []), data: { turn_id: 1, status: "rejected" } }])).not.toBe(marker);
  });
});

describe("priorValues", () => {
  const known = [
    node("fact.work", "semantic", "works night shifts", ["work"], { fact: true, key: "work" }),
    node("fact.home", "semantic", "lives in Lisbon", ["home"], { fact: true, key: "home" }),
  ];
  const fact = (key: string, text: string) => ({ key, text, topics: [], recurrence: 2, created_at: 1, updated_at: 4 });

  it("keeps a changed fact's earlier value, with an evolves edge to the fact; a restated one keeps none", () => {
    const { nodes, edges } = priorValues(
      "s",
      known,
      [fact("work", "works days"), fact("home", "lives in Lisbon")],
      ["work", "home"],
      4,
    );
    expect(nodes).toEqual([
      expect.objectContaining({
        id: "prior.fact.work.4",
        kind: "semantic",
        text: "works night shifts",
        data: { prior: true, key: "work", of: "fact.work", status: "proposed", updated_turn: 4 },
      }),
    ]);
    expect(edges).toEqual([{ from: "prior.fact.work.4", to: "fact.work", kind: "evolves", session_id: "s" }]);
  });
});
