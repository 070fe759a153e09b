/**
 * The memory graph's maximum age (`CONCLAVE_RETAIN_MEMORY_GRAPH`) as its
 * readers see it. nats-server drops a KV entry older than the bucket's
 * `max_age` without a delete marker, so a worker's in-memory copy of a
 * session would go on holding it: this store leaves out of every read the
 * nodes not changed within the age (and the edges that touch them). For the
 * PostgreSQL backend, which has no age of its own, it also sweeps: the rows
 * not changed within the age are deleted, a bounded batch at a time, by the
 * process that owns the store. See docs/operations.md, "Data lifecycle".
 */
import type { JetStreamManager } from "@nats-io/jetstream";
import { isStreamNotFound } from "../../bus/errors.ts";
import { messageOf } from "../../errors.ts";
import { MEMORY_GRAPH_BUCKET } from "./natsGraphKeys.ts";
import type { MemoryGraphStore } from "./store.ts";
import type { MemoryEdge, MemoryGraphArtifact, MemoryNode, MemoryNodeKind } from "./types.ts";

/** How long the bucket's `max_age`, once read, is trusted before it is read again. */
export const MAX_AGE_REREAD_MS = 30_000;

/** The maximum age of the NATS graph: its bucket's `max_age` (0: none), read again every MAX_AGE_REREAD_MS. */
export function bucketMaxAge(jsm: JetStreamManager): () => Promise<number> {
  let read: { at: number; ageMs: Promise<number> } | undefined;
  return () => {
    const now = Date.now();
    if (!read || now - read.at > MAX_AGE_REREAD_MS) {
      const ageMs = jsm.streams.info(`KV_${MEMORY_GRAPH_BUCKET}`).then(
        (info) => Math.floor(info.config.max_age / 1_000_000),
        (error: unknown) => {
          if (isStreamNotFound(error)) return 0;
          read = undefined; // asked again on the next read
          throw error;
        },
      );
      read = { at: now, ageMs };
    }
    return read.ageMs;
  };
}

/** A store that can delete what was not changed since a time (the PostgreSQL one). */
export interface SweepableGraphStore extends MemoryGraphStore {
  /** Deletes at most `limit` nodes (with their edges) not changed since `beforeMs`: how many. */
  sweep(beforeMs: number, limit: number): Promise<number>;
}

/** Options of {@link withMaxAge}. */
export interface MaxAgeOptions {
  /** The age in ms (0: none), asked on every read. */
  maxAgeMs: () => Promise<number>;
  /** Sweep the store (it must be a SweepableGraphStore) every this many ms. */
  sweepEveryMs?: number;
  /** Told when a sweep fails (the next one tries again). */
  onSweepError?: (message: string) => void;
}

/** Nodes deleted per sweep. */
const SWEEP_LIMIT = 1_000;

/** The store, with every read leaving out what is past the maximum age, and swept when asked. */
export function withMaxAge(store: MemoryGraphStore, options: MaxAgeOptions): MemoryGraphStore {
  const cutoff = async (): Promise<number | null> => {
    const ageMs = await options.maxAgeMs();
    return ageMs > 0 ? Date.now() - ageMs : null;
  };
  const fresh = (nodes: readonly MemoryNode[], since: number | null) =>
    since === null ? nodes : nodes.filter((node) => node.updated_at >= since);
  const freshEdges = (edges: readonly MemoryEdge[], nodes: readonly MemoryNode[]) => {
    const ids = new Set(nodes.map((node) => node.id));
    return edges.filter((edge) => ids.has(edge.from) && ids.has(edge.to));
  };
  let timer: NodeJS.Timeout | undefined;
  if (options.sweepEveryMs && "sweep" in store) {
    let busy = false;
    timer = setInterval(async () => {
      if (busy) return;
      busy = true;
      try {
        const since = await cutoff();
        if (since !== null) await (store as SweepableGraphStore).sweep(since, SWEEP_LIMIT);
      } catch (error) {
        options.onSweepError?.(`memory graph not swept: ${messageOf(error)}`);
      } finally {
        busy = false;
      }
    }, options.sweepEveryMs);
    timer.unref();
  }
  const settled = (store as { settled?: () => Promise<void> }).settled;
  return {
    backend: store.backend,
    upsertNode: (node) => store.upsertNode(node),
    addEdge: (edge) => store.addEdge(edge),
    removeNode: (sessionId, id) => store.removeNode(sessionId, id),
    importSession: (artifact) => store.importSession(artifact),
    dropSession: (sessionId) => store.dropSession(sessionId),
    eraseSession: (sessionId) => store.eraseSession(sessionId),
    // The NATS store's own: when the sessions it dropped have stopped following (its tests wait on it).
    ...(settled ? { settled: () => settled.call(store) } : {}),
    node: async (sessionId, id) => {
      const [node, since] = await Promise.all([store.node(sessionId, id), cutoff()]);
      return node && fresh([node], since).length > 0 ? node : null;
    },
    nodes: async (sessionId, kind?: MemoryNodeKind) => {
      const [nodes, since] = await Promise.all([store.nodes(sessionId, kind), cutoff()]);
      return fresh(nodes, since);
    },
    edges: async (sessionId) => {
      const [edges, nodes, since] = await Promise.all([store.edges(sessionId), store.nodes(sessionId), cutoff()]);
      return since === null ? edges : freshEdges(edges, fresh(nodes, since));
    },
    exportSession: async (sessionId): Promise<MemoryGraphArtifact> => {
      const [artifact, since] = await Promise.all([store.exportSession(sessionId), cutoff()]);
      if (since === null) return artifact;
      const nodes = fresh(artifact.nodes, since);
      return { ...artifact, nodes: [...nodes], edges: freshEdges(artifact.edges, nodes) };
    },
    close: async () => {
      clearInterval(timer);
      await store.close();
    },
  } as MemoryGraphStore;
}
