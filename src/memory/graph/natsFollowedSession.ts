import { decodeNodeId } from "./natsGraphKeys.ts";
import { SessionGraph } from "./sessionGraph.ts";
import type { MemoryEdge, MemoryNode } from "./types.ts";

/**
 * One followed session of the NATS store: its graph, and for each key the
 * revision last applied (a deleted key keeps its last revision, so a late
 * copy of an older write cannot bring it back).
 */
export class FollowedSession {
  readonly graph: SessionGraph;
  readonly revisions = new Map<string, number>();
  /** The edge each edge key holds (a deletion entry carries only the key). */
  readonly edgeAt = new Map<string, MemoryEdge>();
  #stop: (() => Promise<void>) | undefined;
  #stopped: Promise<void> | null = null;

  constructor(sessionId: string) {
    this.graph = new SessionGraph(sessionId);
  }

  /** Sets what stops following (and deletes its consumer); runs it at once when the session was dropped meanwhile. */
  onStop(stop: () => Promise<void>): void {
    this.#stop = stop;
    if (this.#stopped) this.#stopped = stop();
  }

  /** Whether the session was dropped (following it stopped, or is to stop once set up). */
  get stopped(): boolean {
    return this.#stopped !== null;
  }

  /** Stops following the session (at once, or as soon as what stops it is set); resolves once its consumer is deleted. */
  stop(): Promise<void> {
    this.#stopped ??= this.#stop?.() ?? Promise.resolve();
    return this.#stopped;
  }

  /** Whether the entry at `revision` is newer than what was applied for `key` (and records it if so). */
  advance(key: string, revision: number): boolean {
    if (revision <= (this.revisions.get(key) ?? 0)) return false;
    this.revisions.set(key, revision);
    return true;
  }

  /** Applies the node at `revision` unless the copy holds a newer entry of its key; returns the stored copy if applied. */
  applyNode(key: string, revision: number, node: MemoryNode): MemoryNode | undefined {
    if (!this.advance(key, revision)) return undefined;
    return this.graph.putNode(node);
  }

  /** Applies the edge at `revision` unless the copy holds a newer entry of its key. */
  applyEdge(key: string, revision: number, edge: MemoryEdge): void {
    if (!this.advance(key, revision)) return;
    this.graph.putEdge(edge);
    this.edgeAt.set(key, edge);
  }

  /** Removes what `key` held (a node or an edge) from the copy; its last revision stays. */
  removeKey(key: string): void {
    const [, type, token] = key.split(".");
    if (type === "n" && token) this.graph.deleteNode(decodeNodeId(token));
    const edge = this.edgeAt.get(key);
    if (type === "e" && edge) {
      this.graph.deleteEdge(edge);
      this.edgeAt.delete(key);
    }
  }
}
