/**
 * Retention by count for the memory graph: when a session's turn falls out
 * of its window (src/eventlog/sessionTrim.ts), the graph entries that turn
 * left are removed with it: its episodic node `episode.<turn>`, and the facts
 * and threads last changed by it or earlier (`data.updated_turn`), with every
 * edge from or to them. A fact restated by a later turn stays (its text is
 * that turn's). What memory derived from them goes too: an earlier value a
 * fact kept (`prior.…`, whose text is the trimmed turn's) and the insights
 * that name a removed node or a trimmed turn (their text quotes them). In
 * NATS KV each key gets a delete marker first (workers following the
 * session drop their copy), then every message the key still has, marker
 * included, is overwritten with the secure delete an erase uses.
 */
import type { JetStreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/nats-core";
import { isStreamNotFound } from "../../bus/errors.ts";
import { secureErase } from "../../eventlog/eraseSecure.ts";
import type { Logger } from "../../telemetry/log.ts";
import { MEMORY_GRAPH_BUCKET } from "./natsGraphKeys.ts";
import type { MemoryGraphStore } from "./store.ts";
import {
  type MemoryEdge,
  MemoryEdge as MemoryEdgeSchema,
  type MemoryNode,
  MemoryNode as MemoryNodeSchema,
} from "./types.ts";

const decoder = new TextDecoder();

/** Whether a node is one a trimmed turn `turnId` (and the turns before it) left: its episode, or a fact or thread it last changed. */
export function isTrimmedBy(node: Pick<MemoryNode, "id" | "data">, turnId: number): boolean {
  if (node.id === `episode.${turnId}`) return true;
  const turn = node.data.turn_id;
  if (node.id.startsWith("episode.") && typeof turn === "number") return turn <= turnId;
  const updated = node.data.updated_turn;
  if (node.data.prior === true) {
    const source = node.data.source_turn;
    return typeof source === "number" ? source <= turnId : typeof updated === "number" && updated <= turnId;
  }
  return (node.data.fact === true || node.data.thread === true) && typeof updated === "number" && updated <= turnId;
}

/**
 * The nodes a trim of turn `turnId` removes: those isTrimmedBy names, then the insights derived from
 * them (naming a removed node as evidence, or a trimmed turn).
 */
export function trimmedNodes<N extends Pick<MemoryNode, "id" | "data">>(nodes: readonly N[], turnId: number): N[] {
  const trimmed = nodes.filter((node) => isTrimmedBy(node, turnId));
  const removed = new Set(trimmed.map((node) => node.id));
  const derived = nodes.filter((node) => {
    if (node.data.insight !== true || removed.has(node.id)) return false;
    const evidence = Array.isArray(node.data.evidence) ? node.data.evidence : [];
    const turns = Array.isArray(node.data.turns) ? node.data.turns : [];
    return (
      evidence.some((id) => typeof id === "string" && removed.has(id)) ||
      turns.some((turn) => typeof turn === "number" && turn <= turnId)
    );
  });
  return [...trimmed, ...derived];
}

/** The edges to remove with the nodes: every one from or to one of them. */
const edgesOf = (edges: readonly MemoryEdge[], removed: ReadonlySet<string>) =>
  edges.filter((edge) => removed.has(edge.from) || removed.has(edge.to));

/**
 * Removes from the NATS KV graph what the session's turn `turnId` left (see
 * the file's comment): the texts of the nodes removed. The bucket not existing yet is nothing to trim.
 */
export async function trimNatsGraphTurn(
  nc: NatsConnection,
  jsm: JetStreamManager,
  log: Logger,
  sessionId: string,
  turnId: number,
): Promise<string[]> {
  const stream = `KV_${MEMORY_GRAPH_BUCKET}`;
  const prefix = `$KV.${MEMORY_GRAPH_BUCKET}.`;
  let keys: string[];
  try {
    const info = await jsm.streams.info(stream, { subjects_filter: `${prefix}${sessionId}.>` });
    keys = Object.keys(info.state.subjects ?? {}).map((subject) => subject.slice(prefix.length));
  } catch (error) {
    if (isStreamNotFound(error)) return [];
    throw error;
  }
  if (keys.length === 0) return [];
  const kv = await new Kvm(nc).open(MEMORY_GRAPH_BUCKET);
  const values = new Map<string, unknown>();
  for (const key of keys) {
    const entry = await kv.get(key);
    if (entry && entry.operation === "PUT") values.set(key, safeJson(entry.value));
  }
  const nodes = [...values].flatMap(([key, value]) => {
    const node = MemoryNodeSchema.safeParse(value);
    return node.success && key.split(".")[1] === "n" ? [{ key, node: node.data }] : [];
  });
  const trimmed = trimmedNodes(
    nodes.map(({ node }) => node),
    turnId,
  );
  const removed = new Set(trimmed.map((node) => node.id));
  if (removed.size === 0) return [];
  const doomed = [
    ...[...values].flatMap(([key, value]) => {
      const edge = MemoryEdgeSchema.safeParse(value);
      return edge.success && key.split(".")[1] === "e" && edgesOf([edge.data], removed).length > 0 ? [key] : [];
    }),
    ...nodes.filter(({ node }) => removed.has(node.id)).map(({ key }) => key),
  ];
  // Edges before nodes, as the store removes them: no edge is ever left without its node.
  for (const key of doomed) await kv.delete(key);
  const progress = { log, label: `trim of session ${sessionId}: memory graph` };
  for (const key of doomed) await secureErase(jsm, stream, `${prefix}${key}`, progress);
  return trimmed.map((node) => node.text);
}

/** The same trim through a store's own API (the PostgreSQL backend): the texts of the nodes it removed. */
export async function trimGraphTurn(store: MemoryGraphStore, sessionId: string, turnId: number): Promise<string[]> {
  const texts: string[] = [];
  for (const node of trimmedNodes(await store.nodes(sessionId), turnId))
    if (await store.removeNode(sessionId, node.id)) texts.push(node.text);
  return texts;
}

const safeJson = (bytes: Uint8Array): unknown => {
  try {
    return JSON.parse(decoder.decode(bytes));
  } catch {
    return null;
  }
};
