/**
 * The nodes a turn's memory commit writes (its episode, the facts and threads the merge changed),
 * their vectors, and the Episode read back from an episodic node. Pure but for the embedder's call.
 */
import type { Usage } from "../contracts/usage.ts";
import type { Episode } from "../contracts/workspace.ts";
import { type Embedder, EmbeddingError } from "../llm/embeddings.ts";
import {
  MAX_EMBEDDING_DIMENSIONS,
  MAX_NODE_TEXT,
  MAX_NODE_TOPICS,
  type MemoryEdge,
  type MemoryNode,
  type MemoryNodeInput,
} from "./graph/types.ts";
import type { Fact, LearnedEpisode, MergeChanges, Thread } from "./learn/index.ts";
import { procedureId } from "./procedural/nodes.ts";

/** A semantic node that holds a user fact. */
export const isFact = (node: MemoryNode): boolean => node.kind === "semantic" && node.data.fact === true;
/** A semantic node that holds a thread (open or closed). */
export const isThread = (node: MemoryNode): boolean => node.kind === "semantic" && node.data.thread === true;

/** The node id of a fact's key. */
export const factId = (key: string) => `fact.${safeId(key)}`;
/** The node id of a thread's key. */
export const threadId = (key: string) => `thread.${safeId(key)}`;
const safeId = (key: string) => key.replace(/[^A-Za-z0-9_.:-]/g, "-").slice(0, 110);

/** Between the two sides of a turn in its episodic node's text. */
const EPISODE_JOIN = " → ";

/**
 * A turn's episodic node `episode.<turn>`: its text (`user → reply`, cut to what a node holds),
 * its topics, and in `data` its turn and tools, and what rebuilds the Episode from it without a
 * read ({@link episodeOfNode}): `intent`, `ts`, `user_chars`, `response_chars`.
 */
export function episodeNode(episode: Episode, learned: LearnedEpisode): MemoryNodeInput {
  return {
    id: `episode.${episode.turn_id}`,
    session_id: episode.session_id,
    kind: "episodic",
    text: `${episode.user_text}${EPISODE_JOIN}${episode.response}`.slice(0, MAX_NODE_TEXT),
    topics: learned.topics.slice(0, MAX_NODE_TOPICS),
    data: {
      turn_id: episode.turn_id,
      tools: learned.tools,
      intent: episode.intent,
      ts: episode.ts,
      user_chars: episode.user_text.length,
      response_chars: episode.response.length,
    },
  };
}

/**
 * The Episode an episodic node holds; null when it cannot tell: a node written before it kept
 * the episode's fields, or one whose text was cut (the episode store has the whole episode).
 */
export function episodeOfNode(node: MemoryNode): Episode | null {
  const { turn_id: turnId, intent, ts, user_chars: userChars, response_chars: responseChars } = node.data;
  if (typeof intent !== "string" || typeof ts !== "number" || typeof turnId !== "number") return null;
  if (!Number.isInteger(userChars) || !Number.isInteger(responseChars)) return null;
  const split = userChars as number;
  if (node.text.length !== split + EPISODE_JOIN.length + (responseChars as number)) return null;
  if (node.text.slice(split, split + EPISODE_JOIN.length) !== EPISODE_JOIN) return null;
  const tools = toolsOfNode(node);
  return {
    session_id: node.session_id,
    turn_id: turnId,
    user_text: node.text.slice(0, split),
    response: node.text.slice(split + EPISODE_JOIN.length),
    intent,
    ts,
    ...(tools.length > 0 ? { tools_invoked: tools } : {}),
  };
}

/** The tools an episodic node's turn invoked (lowercase, sorted); none for another node. */
export function toolsOfNode(node: MemoryNode): string[] {
  const tools = node.kind === "episodic" ? node.data.tools : undefined;
  return Array.isArray(tools) ? tools.filter((tool): tool is string => typeof tool === "string") : [];
}

/** The fact and thread nodes of what the merge changed (added, updated, opened, reopened, closed). */
export function changedNodes(
  sessionId: string,
  merged: { facts: Fact[]; threads: Thread[]; changes: MergeChanges },
): MemoryNodeInput[] {
  const changed = new Set([
    ...merged.changes.facts_added,
    ...merged.changes.facts_updated,
    ...merged.changes.threads_opened,
    ...merged.changes.threads_reopened,
    ...merged.changes.threads_closed,
  ]);
  const facts = merged.facts
    .filter((candidate) => changed.has(candidate.key))
    .map(
      (fact): MemoryNodeInput => ({
        id: factId(fact.key),
        session_id: sessionId,
        kind: "semantic",
        text: fact.text,
        topics: fact.topics.slice(0, MAX_NODE_TOPICS),
        recurrence: fact.recurrence,
        data: { fact: true, key: fact.key, created_turn: fact.created_at, updated_turn: fact.updated_at },
      }),
    );
  const threads = merged.threads
    .filter((candidate) => changed.has(candidate.key))
    .map(
      (thread): MemoryNodeInput => ({
        id: threadId(thread.key),
        session_id: sessionId,
        kind: "semantic",
        text: thread.text,
        topics: thread.topics.slice(0, MAX_NODE_TOPICS),
        recurrence: thread.recurrence,
        data: {
          thread: true,
          key: thread.key,
          status: thread.status,
          opened_at_turn: thread.opened_at_turn,
          ...(thread.closed_at_turn !== undefined ? { closed_at_turn: thread.closed_at_turn } : {}),
          updated_turn: thread.updated_at,
        },
      }),
    );
  return [...facts, ...threads];
}

/**
 * The edges a turn's episode gets to what it taught: `mentions` to each fact of `changes` (the
 * commit leaves out facts only restated), `opens` to each thread it opened (or reopened),
 * `resolves` to each it closed, `teaches` to each procedure (by label). Written once those nodes are.
 */
export function turnEdges(
  sessionId: string,
  turnId: number,
  changes: MergeChanges | undefined,
  procedureLabels: readonly string[] = [],
): MemoryEdge[] {
  const from = `episode.${turnId}`;
  const edge = (to: string, kind: string): MemoryEdge => ({ from, to, kind, session_id: sessionId });
  return [
    ...[...(changes?.facts_added ?? []), ...(changes?.facts_updated ?? [])].map((key) => edge(factId(key), "mentions")),
    ...[...(changes?.threads_opened ?? []), ...(changes?.threads_reopened ?? [])].map((key) =>
      edge(threadId(key), "opens"),
    ),
    ...(changes?.threads_closed ?? []).map((key) => edge(threadId(key), "resolves")),
    ...procedureLabels.map((label) => edge(procedureId(label), "teaches")),
  ];
}

/**
 * The nodes with their vectors (`embedding`, and `data.embedding_model`: the embedder's id), from
 * one call of the embedder for all of them. A node whose stored copy (among `known`) has the same
 * text and a vector of the same embedder keeps that vector, and costs no text in the call.
 *
 * @throws the embedder's error, or an {@link EmbeddingError} (`invalid_output`) when its vectors do
 *   not fit a node (1 to MAX_EMBEDDING_DIMENSIONS finite numbers, one per text): the caller then
 *   stores the nodes as they are.
 * `onUsage` is told the tokens of the embeddings call, when it made one (see `Embedder.embed`).
 */
export async function embedNodes(
  embedder: Embedder,
  nodes: readonly MemoryNodeInput[],
  known: readonly MemoryNode[] | undefined,
  onUsage?: (usage: Usage) => void,
): Promise<MemoryNodeInput[]> {
  const stored = new Map(known?.map((node) => [node.id, node]));
  const vectors = nodes.map((node) => {
    const before = stored.get(node.id);
    return before?.text === node.text && before.data.embedding_model === embedder.id ? before.embedding : undefined;
  });
  const missing = nodes.flatMap((node, index) => (vectors[index] ? [] : [node.text]));
  const made = missing.length > 0 ? await embedder.embed(missing, undefined, onUsage) : [];
  if (made.length !== missing.length) {
    throw new EmbeddingError("invalid_output", `got ${made.length} vectors for ${missing.length} texts`);
  }
  const unfit = made.find((vector) => !fitsNode(vector));
  if (unfit) {
    throw new EmbeddingError(
      "invalid_output",
      `a vector of ${unfit.length} dimensions does not fit a memory node (1 to ${MAX_EMBEDDING_DIMENSIONS} finite numbers): see CONCLAVE_EMBEDDING_DIMENSIONS`,
    );
  }
  let next = 0;
  return nodes.map((node, index) => ({
    ...node,
    embedding: [...(vectors[index] ?? (made[next++] as number[]))],
    data: { ...node.data, embedding_model: embedder.id },
  }));
}

/** Whether a node can keep the vector: 1 to MAX_EMBEDDING_DIMENSIONS finite numbers. */
const fitsNode = (vector: readonly number[]): boolean =>
  vector.length > 0 && vector.length <= MAX_EMBEDDING_DIMENSIONS && vector.every(Number.isFinite);
