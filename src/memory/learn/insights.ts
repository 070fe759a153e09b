/**
 * Insights: what the memory service observes of a session's graph, derived from it alone, with no
 * model (so offline memory derives the same ones). Pure: the graph's nodes and edges in, the
 * insights out; the caller stores them (src/memory/insights.ts).
 *
 * Three kinds, each with a stable key (the same observation always has the same key, so a
 * dismissed one is known again and never raised again):
 * - `recurring_topic`: a topic of at least {@link RECURRING_TOPIC_TURNS} turns' episodes
 *   (key `topic.<topic>`);
 * - `fact_evolved`: a fact whose slot value changed, while the change is proposed
 *   (key `evolves.<prior node id>`: each change is its own);
 * - `stale_thread`: a thread still open {@link STALE_THREAD_TURNS} turns after it was opened
 *   (key `stale.<thread node id>.<opened turn>`: reopened later, it is a new observation).
 */
import { createHash } from "node:crypto";
import type { MemoryNode } from "../graph/types.ts";

/** A topic recurs once this many turns' episodes carry it. */
export const RECURRING_TOPIC_TURNS = 3;
/** A thread is stale once it has been open this many turns. */
export const STALE_THREAD_TURNS = 5;
/** Most evidence ids one insight names. */
const MAX_EVIDENCE = 20;

/** What an insight observes. */
export type InsightKind = "recurring_topic" | "fact_evolved" | "stale_thread";

/** One derived observation, before it is stored. */
export interface DerivedInsight {
  /** `insight.<kind>.<hash of key>`: stable, and free of the session's text. */
  id: string;
  kind: InsightKind;
  /** What identifies the observation (a dismissed key is never raised again). */
  key: string;
  /** One short line, made of what the graph holds. */
  text: string;
  /** The node ids it rests on (episodes, facts, threads, prior values), at most 20. */
  evidence: string[];
  /** The turns it rests on, ascending. */
  turns: number[];
}

/** The nodes derivation reads: episodes, facts, threads and prior fact values. */
export interface InsightInput {
  nodes: readonly MemoryNode[];
  /** The keys of the session's dismissed insights: never derived again. */
  dismissed: ReadonlySet<string>;
}

/** The id of the insight of `key`. */
export function insightId(kind: InsightKind, key: string): string {
  return `insight.${kind}.${createHash("sha256").update(key).digest("hex").slice(0, 16)}`;
}

const turnOf = (node: MemoryNode, field: string): number => {
  const value = Number(node.data[field] ?? 0);
  return Number.isFinite(value) ? value : 0;
};

/** A prior fact value node (`prior.<fact node id>.<turn>`, written when a merge changed the slot). */
export const isPriorValue = (node: MemoryNode): boolean => node.kind === "semantic" && node.data.prior === true;

/**
 * The session's insights, ordered by id: every observation the graph supports now whose key is
 * not dismissed. Deterministic: the same graph always gives the same insights.
 */
export function deriveInsights({ nodes, dismissed }: InsightInput): DerivedInsight[] {
  const out: DerivedInsight[] = [];
  const add = (kind: InsightKind, key: string, text: string, evidence: string[], turns: number[]) => {
    if (dismissed.has(key)) return;
    out.push({
      id: insightId(kind, key),
      kind,
      key,
      text: text.slice(0, 500),
      evidence: evidence.slice(0, MAX_EVIDENCE),
      turns: [...new Set(turns)].sort((a, b) => a - b),
    });
  };
  const byId = new Map(nodes.map((node) => [node.id, node]));
  // In turn order, whatever order the nodes come in: the same graph gives the same evidence.
  const episodes = nodes
    .filter((node) => node.kind === "episodic")
    .sort((a, b) => turnOf(a, "turn_id") - turnOf(b, "turn_id"));
  const latestTurn = Math.max(0, ...episodes.map((node) => turnOf(node, "turn_id")));

  const topicTurns = new Map<string, { ids: string[]; turns: number[] }>();
  for (const episode of episodes)
    for (const topic of new Set(episode.topics)) {
      const seen = topicTurns.get(topic) ?? { ids: [], turns: [] };
      seen.ids.push(episode.id);
      seen.turns.push(turnOf(episode, "turn_id"));
      topicTurns.set(topic, seen);
    }
  for (const [topic, seen] of topicTurns)
    if (seen.turns.length >= RECURRING_TOPIC_TURNS)
      add(
        "recurring_topic",
        `topic.${topic}`,
        `"${topic}" came up in ${seen.turns.length} turns`,
        seen.ids,
        seen.turns,
      );

  for (const prior of nodes.filter(isPriorValue)) {
    if (prior.data.status !== "proposed") continue;
    const current = byId.get(String(prior.data.of));
    if (!current) continue;
    add(
      "fact_evolved",
      `evolves.${prior.id}`,
      `${String(prior.data.key)}: "${prior.text}" became "${current.text}"`,
      [prior.id, current.id],
      [turnOf(prior, "updated_turn")],
    );
  }

  for (const thread of nodes) {
    if (thread.kind !== "semantic" || thread.data.thread !== true || thread.data.status === "closed") continue;
    const opened = turnOf(thread, "opened_at_turn");
    const open = latestTurn - opened;
    if (opened > 0 && open >= STALE_THREAD_TURNS)
      add(
        "stale_thread",
        `stale.${thread.id}.${opened}`,
        `open for ${open} turns: ${thread.text}`,
        [thread.id],
        [opened],
      );
  }
  return out.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/**
 * What the insights are derived from, as one string: a hash of every episode's, fact's and
 * thread's id, text, topics and status (not procedures, the persona or the service's own
 * `runtime_state` nodes, insights included), so it changes whenever one is added, changed or removed. Content only (no store timestamps):
 * a commit knows it before its writes are stored, and writes the insights with them.
 */
export function graphMarker(nodes: readonly MemoryNode[]): string {
  const hash = createHash("sha256");
  let count = 0;
  for (const node of [...nodes].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))) {
    if (node.kind !== "episodic" && node.kind !== "semantic") continue;
    count++;
    hash.update(JSON.stringify([node.id, node.text, node.topics, node.data.status ?? null]));
  }
  return `${count}:${hash.digest("hex").slice(0, 24)}`;
}
