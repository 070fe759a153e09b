/**
 * The in-memory copy of one session's memory graph that every store answers
 * reads from: nodes by id and by kind, edges by identity and by node.
 */

import { DEFAULT_MEMORY_GRAPH_IDLE_MS } from "./store.ts";
import {
  edgeIdentity,
  type MemoryEdge,
  type MemoryGraphArtifact,
  type MemoryNode,
  type MemoryNodeKind,
} from "./types.ts";

const byId = (a: MemoryNode, b: MemoryNode): number => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
const byEnds = (a: MemoryEdge, b: MemoryEdge): number => {
  const x = edgeIdentity(a);
  const y = edgeIdentity(b);
  return x < y ? -1 : x > y ? 1 : 0;
};

/** A deep copy of the node, frozen: what the graph holds and hands out. */
function frozenNode(node: MemoryNode): MemoryNode {
  const copy = structuredClone(node);
  Object.freeze(copy.topics);
  if (copy.embedding) Object.freeze(copy.embedding);
  deepFreeze(copy.data);
  return Object.freeze(copy);
}

function deepFreeze(value: unknown): void {
  if (typeof value !== "object" || value === null || Object.isFrozen(value)) return;
  for (const inner of Object.values(value)) deepFreeze(inner);
  Object.freeze(value);
}

/**
 * One session's graph in memory. Lists are built on demand and cached until
 * the next change, so repeated reads between writes cost nothing.
 */
export class SessionGraph {
  readonly #nodes = new Map<string, MemoryNode>();
  readonly #edges = new Map<string, MemoryEdge>();
  /** The identities of the edges from or to each node. */
  readonly #edgesOf = new Map<string, Set<string>>();
  #sortedNodes: readonly MemoryNode[] | null = null;
  #sortedByKind = new Map<MemoryNodeKind, readonly MemoryNode[]>();
  #sortedEdges: readonly MemoryEdge[] | null = null;

  constructor(readonly sessionId: string) {}

  get size(): number {
    return this.#nodes.size;
  }

  node(id: string): MemoryNode | undefined {
    return this.#nodes.get(id);
  }

  /** The nodes (of one kind), ordered by id: a frozen array, shared until the next change. */
  nodes(kind?: MemoryNodeKind): readonly MemoryNode[] {
    if (!this.#sortedNodes) this.#sortedNodes = Object.freeze([...this.#nodes.values()].sort(byId));
    if (kind === undefined) return this.#sortedNodes;
    let ofKind = this.#sortedByKind.get(kind);
    if (!ofKind) {
      ofKind = Object.freeze(this.#sortedNodes.filter((node) => node.kind === kind));
      this.#sortedByKind.set(kind, ofKind);
    }
    return ofKind;
  }

  /** The edges ordered by `(from, to, kind)`: a frozen array, shared until the next change. */
  edges(): readonly MemoryEdge[] {
    if (!this.#sortedEdges) this.#sortedEdges = Object.freeze([...this.#edges.values()].sort(byEnds));
    return this.#sortedEdges;
  }

  hasEdge(edge: MemoryEdge): boolean {
    return this.#edges.has(edgeIdentity(edge));
  }

  /** Stores (a frozen copy of) the node; returns that copy. */
  putNode(node: MemoryNode): MemoryNode {
    const stored = frozenNode(node);
    this.#nodes.set(stored.id, stored);
    this.#nodesChanged();
    return stored;
  }

  /** Removes the node and the edges from or to it; returns those edges. */
  deleteNode(id: string): MemoryEdge[] {
    const removed: MemoryEdge[] = [];
    for (const identity of this.#edgesOf.get(id) ?? []) {
      const edge = this.#edges.get(identity);
      if (edge) removed.push(edge);
    }
    for (const edge of removed) this.deleteEdge(edge);
    if (this.#nodes.delete(id)) this.#nodesChanged();
    return removed;
  }

  putEdge(edge: MemoryEdge): void {
    const identity = edgeIdentity(edge);
    if (this.#edges.has(identity)) return;
    this.#edges.set(identity, Object.freeze({ ...edge }));
    for (const end of [edge.from, edge.to]) {
      let of = this.#edgesOf.get(end);
      if (!of) {
        of = new Set();
        this.#edgesOf.set(end, of);
      }
      of.add(identity);
    }
    this.#sortedEdges = null;
  }

  deleteEdge(edge: MemoryEdge): void {
    const identity = edgeIdentity(edge);
    if (!this.#edges.delete(identity)) return;
    for (const end of [edge.from, edge.to]) {
      const of = this.#edgesOf.get(end);
      of?.delete(identity);
      if (of?.size === 0) this.#edgesOf.delete(end);
    }
    this.#sortedEdges = null;
  }

  /** Forgets every node and edge. */
  clear(): void {
    this.#nodes.clear();
    this.#edges.clear();
    this.#edgesOf.clear();
    this.#nodesChanged();
    this.#sortedEdges = null;
  }

  artifact(): MemoryGraphArtifact {
    return {
      version: 1,
      session_id: this.sessionId,
      nodes: this.nodes().map((node) => structuredClone(node)),
      edges: this.edges().map((edge) => ({ ...edge })),
    };
  }

  #nodesChanged(): void {
    this.#sortedNodes = null;
    this.#sortedByKind.clear();
  }
}

/** How a SessionCache sizes itself beyond its most sessions. */
export interface SessionCacheOptions {
  /** A session unused this long (ms) is dropped at the cache's next use. Default DEFAULT_MEMORY_GRAPH_IDLE_MS. */
  idleMs?: number;
  /** The clock idleness is measured on. Default `Date.now`. */
  now?: () => number;
}

/**
 * The sessions a store holds in memory, loaded on first use (concurrent
 * first uses share one load; a failed load is forgotten, so the next use
 * tries again). It holds the sessions in use: one unused for `idleMs` is
 * dropped at the next use of the cache, and past `max` the least recently
 * used one is, so a store's memory (and, for NATS, its consumers) follows the
 * sessions it serves rather than every session it ever saw.
 */
export class SessionCache<T> {
  /** Least recently used first. */
  readonly #entries = new Map<string, { value: Promise<T>; usedAt: number }>();
  readonly #idleMs: number;
  readonly #now: () => number;
  /** Drops under way (a NATS follow deleting its consumer). */
  readonly #dropping = new Set<Promise<void>>();

  constructor(
    private readonly max: number,
    private readonly load: (sessionId: string) => Promise<T>,
    /** Told about a loaded session that is dropped (to stop following it); `clear` waits for what it returns. */
    private readonly onDrop: (value: T) => void | Promise<void> = () => {},
    options: SessionCacheOptions = {},
  ) {
    this.#idleMs = options.idleMs ?? DEFAULT_MEMORY_GRAPH_IDLE_MS;
    this.#now = options.now ?? Date.now;
  }

  /** How many sessions it holds (loaded or loading). */
  get size(): number {
    return this.#entries.size;
  }

  get(sessionId: string): Promise<T> {
    const now = this.#now();
    let entry = this.#entries.get(sessionId);
    if (entry) {
      // Most recently used last.
      this.#entries.delete(sessionId);
      this.#entries.set(sessionId, { value: entry.value, usedAt: now });
      this.#dropIdle(now);
      return entry.value;
    }
    const value = this.load(sessionId);
    entry = { value, usedAt: now };
    this.#entries.set(sessionId, entry);
    value.catch(() => {
      if (this.#entries.get(sessionId)?.value === value) this.#entries.delete(sessionId);
    });
    this.#dropIdle(now);
    while (this.#entries.size > this.max) this.#dropOldest();
    return value;
  }

  /** Drops the session if `value` is still what it holds (so the next use loads it again). */
  forget(sessionId: string, value: T): void {
    const entry = this.#entries.get(sessionId);
    if (!entry) return;
    void entry.value.then(
      (held) => {
        if (held === value && this.#entries.get(sessionId) === entry) this.#entries.delete(sessionId);
      },
      () => {},
    );
  }

  /** Drops the session, whatever it holds; resolves once the drop is done, with whether it held the session. */
  async drop(sessionId: string): Promise<boolean> {
    const entry = this.#entries.get(sessionId);
    if (!entry) return false;
    this.#entries.delete(sessionId);
    this.#drop(entry.value);
    await this.settled();
    return true;
  }

  /** Drops every session; resolves once each drop is done. */
  async clear(): Promise<void> {
    const values = [...this.#entries.values()].map((entry) => entry.value);
    this.#entries.clear();
    for (const value of values) this.#drop(value);
    await this.settled();
  }

  /** Resolves once the sessions dropped so far are done dropping (`onDrop` settled). */
  async settled(): Promise<void> {
    await Promise.all([...this.#dropping]);
  }

  #dropIdle(now: number): void {
    for (const entry of this.#entries.values()) {
      if (now - entry.usedAt < this.#idleMs) return; // the rest were used later
      this.#dropOldest();
    }
  }

  #dropOldest(): void {
    const [oldest, entry] = this.#entries.entries().next().value as [string, { value: Promise<T> }];
    this.#entries.delete(oldest);
    this.#drop(entry.value);
  }

  #drop(value: Promise<T>): void {
    const dropping = value.then(this.onDrop).then(
      () => {},
      () => {},
    );
    this.#dropping.add(dropping);
    void dropping.finally(() => this.#dropping.delete(dropping));
  }
}
