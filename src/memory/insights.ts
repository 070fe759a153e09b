/**
 * A session's insights and `evolves` edges, kept in its memory graph (docs/memory.md, "Insights"):
 * derived from the graph after each commit and on refresh (src/memory/learn/insights.ts), stored
 * as `runtime_state` nodes `insight.<kind>.<hash>`; the marker of the graph they were derived from
 * is on the runtime-state node (`insights_marker`). Everything here is in the graph, so erasing the
 * graph erases it.
 */
import type { MemoryInsight, MemoryInsightReply } from "../contracts/memoryInsights.ts";
import { ConclaveError } from "../errors.ts";
import type { MemoryGraphStore } from "./graph/store.ts";
import type { MemoryEdge, MemoryNode, MemoryNodeInput } from "./graph/types.ts";
import { type DerivedInsight, deriveInsights, graphMarker, isPriorValue } from "./learn/insights.ts";
import type { Fact } from "./learn/merge.ts";
import { isFact } from "./turnNodes.ts";

/** The runtime-state node: it keeps the marker of the graph the insights were last derived from (`insights_marker`). */
export const RUNTIME_STATE = "runtime_state";
/** The kind of the edge from a fact's earlier value to the fact. */
export const EVOLVES = "evolves";

/** An `evolves` edge that the session does not have (or no longer can be reviewed): code `not_found`. */
export class UnknownEvolvesEdgeError extends ConclaveError<"not_found"> {
  constructor(sessionId: string, edge: string) {
    super("not_found", `session ${sessionId} has no evolves edge ${edge} (see conclave memory insights)`);
  }
}

/** An insight the session does not have: code `not_found`. */
export class UnknownInsightError extends ConclaveError<"not_found"> {
  constructor(sessionId: string, insight: string) {
    super("not_found", `session ${sessionId} has no insight ${insight} (see conclave memory insights --all)`);
  }
}

const isInsight = (node: MemoryNode): boolean => node.kind === "runtime_state" && node.data.insight === true;

/** The insight a stored node holds, as a client reads it. */
function insightOf(node: MemoryNode): MemoryInsight {
  const data = node.data as { kind: MemoryInsight["kind"]; evidence?: string[]; turns?: number[]; status?: string };
  const evidence = [...(data.evidence ?? [])];
  const edge = data.kind === "fact_evolved" ? evidence.find((id) => id.startsWith("prior.")) : undefined;
  return {
    id: node.id,
    kind: data.kind,
    text: node.text,
    evidence,
    turns: [...(data.turns ?? [])],
    status: data.status === "dismissed" ? "dismissed" : "open",
    ...(edge ? { edge } : {}),
  };
}

const storedInsight = (sessionId: string, insight: DerivedInsight): MemoryNodeInput => ({
  id: insight.id,
  session_id: sessionId,
  kind: "runtime_state",
  text: insight.text,
  topics: [],
  data: { insight: true, kind: insight.kind, key: insight.key, evidence: insight.evidence, turns: insight.turns },
});

/**
 * The nodes and edges that keep a turn's fact changes reviewable: for each fact whose value the
 * merge changed (not merely restated), a node of its earlier value `prior.<fact node>.<turn>`
 * (proposed) and the `evolves` edge from it to the fact. Pure.
 */
export function priorValues(
  sessionId: string,
  known: readonly MemoryNode[] | undefined,
  facts: readonly Fact[],
  updated: readonly string[],
  turnId: number,
): { nodes: MemoryNodeInput[]; edges: MemoryEdge[] } {
  const before = new Map((known ?? []).filter(isFact).map((node) => [String(node.data.key), node]));
  const nodes: MemoryNodeInput[] = [];
  const edges: MemoryEdge[] = [];
  for (const fact of facts) {
    const old = before.get(fact.key);
    if (!updated.includes(fact.key) || !old || old.text === fact.text) continue;
    const id = `prior.${old.id}.${turnId}`.slice(0, 128);
    nodes.push({
      id,
      session_id: sessionId,
      kind: "semantic",
      text: old.text,
      topics: [...old.topics],
      // `source_turn`: the turn whose text it keeps; a trim of that turn removes it (trimTurn.ts).
      data: {
        prior: true,
        key: fact.key,
        of: old.id,
        status: "proposed",
        updated_turn: turnId,
        ...(typeof old.data.updated_turn === "number" ? { source_turn: old.data.updated_turn } : {}),
      },
      ...(old.embedding ? { embedding: [...old.embedding] } : {}),
    });
    edges.push({ from: id, to: old.id, kind: EVOLVES, session_id: sessionId });
  }
  return { nodes, edges };
}

/**
 * The session's nodes as they will be once `writes` are stored (what a commit derives its
 * insights from, so it writes them alongside): the stored ones, replaced or joined by `writes`.
 */
export function projectedNodes(stored: readonly MemoryNode[], writes: readonly MemoryNodeInput[]): MemoryNode[] {
  const byId = new Map(stored.map((node) => [node.id, node]));
  for (const write of writes)
    byId.set(write.id, {
      ...write,
      topics: write.topics ?? [],
      recurrence: write.recurrence ?? 1,
      data: write.data ?? {},
      created_at: write.created_at ?? 0,
      updated_at: write.updated_at ?? 0,
    });
  return [...byId.values()];
}

/** What deriving the insights again changes in the graph (nothing to do when null). */
export interface InsightsPlan {
  /** The marker of the graph derived from (kept on the runtime-state node). */
  marker: string;
  /** The insights to store (new or changed). */
  upserts: MemoryNodeInput[];
  /** The insights the graph no longer supports (dismissed ones stay). */
  removals: string[];
  /** The insights raised for the first time. */
  raised: NonNullable<MemoryInsightReply["raised"]>;
  /** The session's insights once the plan is stored. */
  insights: MemoryInsight[];
}

/**
 * What deriving the session's insights from `nodes` changes, given the marker of the graph they
 * were last derived from: null when the graph did not change (or is empty: a new or erased
 * session gets nothing written). Pure.
 */
export function planInsights(
  sessionId: string,
  nodes: readonly MemoryNode[],
  lastMarker: unknown,
): InsightsPlan | null {
  if (nodes.length === 0) return null;
  const marker = graphMarker(nodes);
  if (marker === lastMarker) return null;
  const stored = nodes.filter(isInsight);
  const dismissed = new Set(stored.filter((node) => node.data.status === "dismissed").map((n) => String(n.data.key)));
  const derived = deriveInsights({ nodes, dismissed });
  const byId = new Map(stored.map((node) => [node.id, node]));
  const plan: InsightsPlan = { marker, upserts: [], removals: [], raised: [], insights: [] };
  for (const insight of derived) {
    const held = byId.get(insight.id);
    if (!held) plan.raised.push({ id: insight.id, kind: insight.kind });
    const write = storedInsight(sessionId, insight);
    const same =
      held &&
      held.text === insight.text &&
      JSON.stringify([held.data.evidence, held.data.turns]) === JSON.stringify([insight.evidence, insight.turns]);
    if (!same) plan.upserts.push(write);
    plan.insights.push(
      insightOf({ ...write, topics: [], recurrence: 1, data: write.data ?? {}, created_at: 0, updated_at: 0 }),
    );
  }
  const kept = new Set(derived.map((insight) => insight.id));
  for (const node of stored) if (node.data.status !== "dismissed" && !kept.has(node.id)) plan.removals.push(node.id);
  return plan;
}

/** A session's insights and reviews, on its memory graph. */
export class MemoryInsights {
  constructor(private readonly graph: MemoryGraphStore) {}

  /** The open insights (with `all`, the dismissed too), derived again first if the graph changed. */
  async list(sessionId: string, all = false): Promise<MemoryInsightReply> {
    const { raised } = await this.refresh(sessionId);
    const stored = (await this.graph.nodes(sessionId, "runtime_state")).filter(isInsight).map(insightOf);
    const insights = all ? stored : stored.filter((insight) => insight.status === "open");
    return { insights, ...(raised?.length ? { raised } : {}) };
  }

  /** The plan's insight writes and removals (what a commit stores alongside its own writes). */
  store(sessionId: string, plan: InsightsPlan): Promise<unknown>[] {
    return [
      ...plan.upserts.map((node) => this.graph.upsertNode(node)),
      ...plan.removals.map((id) => this.graph.removeNode(sessionId, id)),
    ];
  }

  /**
   * Derives the insights again if the graph changed since they last were (the marker
   * `insights_marker` on the runtime-state node differs): new ones are stored and named in
   * `raised`, those the graph no longer supports are removed, dismissed ones stay (so they are
   * never raised again).
   */
  async refresh(sessionId: string): Promise<MemoryInsightReply & { refreshed: boolean }> {
    const [nodes, state] = await Promise.all([this.graph.nodes(sessionId), this.graph.node(sessionId, RUNTIME_STATE)]);
    const plan = planInsights(sessionId, nodes, state?.data.insights_marker);
    if (!plan) {
      const open = nodes.filter(isInsight).map(insightOf);
      return { refreshed: false, insights: open.filter((insight) => insight.status === "open") };
    }
    await Promise.all([
      ...this.store(sessionId, plan),
      this.graph.upsertNode({
        id: RUNTIME_STATE,
        session_id: sessionId,
        kind: "runtime_state",
        text: state?.text ?? "runtime state",
        data: { ...(state?.data ?? {}), insights_marker: plan.marker },
      }),
    ]);
    return {
      refreshed: true,
      insights: plan.insights,
      ...(plan.raised.length ? { raised: plan.raised } : {}),
    };
  }

  /** Dismisses the insight: it stays, dismissed, so its observation is never raised again. */
  async dismiss(sessionId: string, id: string): Promise<MemoryInsight> {
    const node = await this.graph.node(sessionId, id);
    if (!node || !isInsight(node)) throw new UnknownInsightError(sessionId, id);
    const stored = await this.graph.upsertNode({ ...node, data: { ...node.data, status: "dismissed" } });
    return insightOf(stored);
  }

  /**
   * Accepts or rejects a fact's change: accept keeps its value; reject restores the earlier one
   * as the fact's (retrieval and search give it) unless the fact changed again since (`conflict`).
   */
  async review(
    sessionId: string,
    edge: string,
    decision: "accept" | "reject",
  ): Promise<NonNullable<MemoryInsightReply["reviewed"]>> {
    const prior = await this.graph.node(sessionId, edge);
    const factNodeId = prior && isPriorValue(prior) ? String(prior.data.of) : undefined;
    const fact = factNodeId ? await this.graph.node(sessionId, factNodeId) : null;
    if (!prior || !fact || prior.data.status !== "proposed") throw new UnknownEvolvesEdgeError(sessionId, edge);
    if (decision === "reject") {
      if (Number(fact.data.updated_turn) !== Number(prior.data.updated_turn))
        throw new ConclaveError(
          "conflict",
          `the fact of evolves edge ${edge} changed again since: review its later change instead`,
        );
      const { embedding: _dropped, ...rest } = fact;
      await this.graph.upsertNode({
        ...rest,
        text: prior.text,
        topics: [...prior.topics],
        ...(prior.embedding ? { embedding: [...prior.embedding] } : {}),
      });
    }
    const status = decision === "accept" ? "accepted" : "rejected";
    await this.graph.upsertNode({ ...prior, data: { ...prior.data, status } });
    return { edge, from: prior.id, to: fact.id, status };
  }

  /** Drops the session's in-memory graph: the next read loads it again. What was dropped. */
  async clearCache(sessionId: string): Promise<string[]> {
    return (await this.graph.dropSession(sessionId)) ? ["graph"] : [];
  }
}
