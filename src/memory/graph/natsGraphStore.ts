/**
 * The memory graph in the NATS KV bucket `conclave_memory_graph`: the
 * default backend, since every worker is on the bus already.
 *
 * Keys: `<session>.n.<encoded node id>` for a node, `<session>.e.<hash>` for
 * an edge (the hash: the first 32 hex digits of the SHA-256 of its
 * `(from, to, kind)`). A node id may hold `.` and `:`, which would split (or
 * break) a KV key token: they are written `=2E` and `=3A` (`=` and two
 * uppercase hex digits, the character's code); `=` itself never occurs in an
 * id, so the encoding is one-to-one and every node id is one key token.
 */
import { createHash } from "node:crypto";
import { DeliverPolicy, type JetStreamClient, type JsMsg, jetstream } from "@nats-io/jetstream";
import { type KV, Kvm } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/nats-core";
import type { z } from "zod";
import { CorruptValueError, KV_DEAD_LETTERS } from "../../bus/jsonKv.ts";
import { buckets } from "../../bus/subjects.ts";
import { messageOf } from "../../errors.ts";
import { deadLetter } from "../../eventlog/deadLetters.ts";
import { SessionCache, SessionGraph } from "./sessionGraph.ts";
import {
  checkEdge,
  checkSessionId,
  DEFAULT_MEMORY_GRAPH_SESSIONS,
  DEFAULT_MEMORY_GRAPH_TIMEOUT_MS,
  danglingEdge,
  type MemoryGraphStore,
  MemoryGraphStoreError,
  nextNode,
  withDeadline,
} from "./store.ts";
import {
  edgeIdentity,
  MemoryEdge,
  type MemoryGraphArtifact,
  MemoryNode,
  type MemoryNodeInput,
  type MemoryNodeKind,
  validateArtifact,
  zodProblems,
} from "./types.ts";

/** The KV bucket of the memory graph (the worker role is granted it in nats.conf). */
export const MEMORY_GRAPH_BUCKET = buckets.memoryGraph;

/** Largest stored value: a node of 4 000 characters with a 1 536-number embedding fits many times over. */
const MAX_VALUE_BYTES = 256 * 1024;

/** KV writes in flight at once during an import or a removal. */
const WRITE_BATCH = 64;

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** A node id as one KV key token: `.` → `=2E`, `:` → `=3A` (see the file's comment). */
export const encodeNodeId = (id: string): string =>
  id.replace(/[.:=]/g, (char) => `=${char.charCodeAt(0).toString(16).toUpperCase().padStart(2, "0")}`);

/** The node id a key token encodes (encodeNodeId's inverse). */
export const decodeNodeId = (token: string): string =>
  token.replace(/=([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)));

/** The key of a node. */
export const nodeKey = (sessionId: string, id: string): string => `${sessionId}.n.${encodeNodeId(id)}`;

/** The key of an edge. */
export const edgeKey = (edge: MemoryEdge): string =>
  `${edge.session_id}.e.${createHash("sha256").update(edgeIdentity(edge)).digest("hex").slice(0, 32)}`;

/** Options of the NATS store. */
export interface NatsMemoryGraphStoreOptions {
  /** Longest one call may take (a session's first load included). Default DEFAULT_MEMORY_GRAPH_TIMEOUT_MS (3 s). */
  timeoutMs?: number;
  /** Sessions kept in memory (and followed) at once. Default DEFAULT_MEMORY_GRAPH_SESSIONS. */
  maxSessions?: number;
  /**
   * Told about a stored value that is not valid JSON, fails its schema, or
   * does not belong under its key: it is skipped (the in-memory copy keeps
   * what it had), once per key and revision. Default: a dead letter on
   * `conclave.dlq.kv`, as JsonKv reports its quarantined values.
   */
  onInvalid?: (error: CorruptValueError) => void;
}

/**
 * One followed session: its graph, and for each key the revision last
 * applied (a deleted key keeps its last revision, so a late copy of an older
 * write cannot bring it back).
 */
class Followed {
  readonly graph: SessionGraph;
  readonly revisions = new Map<string, number>();
  /** The edge each edge key holds (a deletion entry carries only the key). */
  readonly edgeAt = new Map<string, MemoryEdge>();
  #stop: (() => void) | undefined;
  #stopped = false;

  constructor(sessionId: string) {
    this.graph = new SessionGraph(sessionId);
  }

  /** Sets what stops following; runs it at once when the session was dropped meanwhile. */
  onStop(stop: () => void): void {
    this.#stop = stop;
    if (this.#stopped) stop();
  }

  get stopped(): boolean {
    return this.#stopped;
  }

  stop(): void {
    this.#stopped = true;
    this.#stop?.();
  }

  /** Whether the entry at `revision` is newer than what was applied for `key` (and records it if so). */
  advance(key: string, revision: number): boolean {
    if (revision <= (this.revisions.get(key) ?? 0)) return false;
    this.revisions.set(key, revision);
    return true;
  }
}

/**
 * The memory graph in NATS KV. The NATS connection is the caller's: `close()`
 * stops following sessions and leaves it open. Writes are last-writer-wins
 * per key; an import or a removal is several writes, not a transaction (a
 * failure midway leaves part of it done: import again, or remove again).
 */
export class NatsMemoryGraphStore implements MemoryGraphStore {
  readonly backend = "nats";
  readonly #sessions: SessionCache<Followed>;
  readonly #reported = new Set<string>();
  readonly #onInvalid: (error: CorruptValueError, raw: Uint8Array) => void;
  #closed = false;

  private constructor(
    private readonly kv: KV,
    private readonly js: JetStreamClient,
    private readonly stream: string,
    private readonly timeoutMs: number,
    options: NatsMemoryGraphStoreOptions,
  ) {
    this.#sessions = new SessionCache(
      options.maxSessions ?? DEFAULT_MEMORY_GRAPH_SESSIONS,
      (sessionId) => this.#follow(sessionId),
      (followed) => followed.stop(),
    );
    const onInvalid = options.onInvalid;
    this.#onInvalid = onInvalid
      ? (error) => onInvalid(error)
      : (error, raw) => {
          void deadLetter(this.js, KV_DEAD_LETTERS, {
            subject: `$KV.${MEMORY_GRAPH_BUCKET}.${error.key}`,
            data: raw,
            code: error.code,
            reason: error.message,
          });
        };
  }

  /** Opens (creating if missing) the bucket; a MemoryGraphStoreError when NATS refuses or does not answer in time. */
  static async open(nc: NatsConnection, options: NatsMemoryGraphStoreOptions = {}): Promise<NatsMemoryGraphStore> {
    const timeoutMs = options.timeoutMs ?? DEFAULT_MEMORY_GRAPH_TIMEOUT_MS;
    const what = `nats memory graph: cannot open KV bucket ${MEMORY_GRAPH_BUCKET}`;
    const kv = await withDeadline("nats", what, timeoutMs, undefined, () =>
      // history 1: a node or an edge is replaced whole, earlier versions are of no use.
      new Kvm(nc).create(MEMORY_GRAPH_BUCKET, { history: 1, maxValueSize: MAX_VALUE_BYTES }),
    );
    return new NatsMemoryGraphStore(kv, jetstream(nc), `KV_${MEMORY_GRAPH_BUCKET}`, timeoutMs, options);
  }

  async upsertNode(input: MemoryNodeInput): Promise<MemoryNode> {
    const sessionId = checkSessionId(String(input?.session_id));
    const followed = await this.#session(sessionId);
    const node = nextNode(input, followed.graph.node(input.id));
    const key = nodeKey(sessionId, node.id);
    const revision = await this.#call(`upsert of node '${node.id}'`, sessionId, () =>
      this.kv.put(key, encoder.encode(JSON.stringify(node))),
    );
    return this.#applyNode(followed, key, revision, node) ?? followed.graph.node(node.id) ?? node;
  }

  async node(sessionId: string, id: string): Promise<MemoryNode | null> {
    return (await this.#session(checkSessionId(sessionId))).graph.node(id) ?? null;
  }

  async nodes(sessionId: string, kind?: MemoryNodeKind): Promise<readonly MemoryNode[]> {
    return (await this.#session(checkSessionId(sessionId))).graph.nodes(kind);
  }

  async addEdge(input: MemoryEdge): Promise<void> {
    const edge = checkEdge(input);
    const followed = await this.#session(edge.session_id);
    const missing = [...new Set([edge.from, edge.to])].filter((id) => !followed.graph.node(id));
    if (missing.length > 0) throw danglingEdge(edge, missing);
    if (followed.graph.hasEdge(edge)) return;
    const key = edgeKey(edge);
    const revision = await this.#call(`add of edge '${edge.from}' → '${edge.to}'`, edge.session_id, () =>
      this.kv.put(key, encoder.encode(JSON.stringify(edge))),
    );
    this.#applyEdge(followed, key, revision, edge);
  }

  async edges(sessionId: string): Promise<readonly MemoryEdge[]> {
    return (await this.#session(checkSessionId(sessionId))).graph.edges();
  }

  async removeNode(sessionId: string, id: string): Promise<boolean> {
    const followed = await this.#session(checkSessionId(sessionId));
    if (!followed.graph.node(id)) return false;
    // Edges first: a failure midway leaves the node with fewer edges, never an edge without its node.
    const edges = followed.graph.edges().filter((edge) => edge.from === id || edge.to === id);
    await this.#deleteKeys(
      followed,
      edges.map((edge) => edgeKey(edge)),
      `removal of node '${id}'`,
    );
    await this.#deleteKeys(followed, [nodeKey(sessionId, id)], `removal of node '${id}'`);
    return true;
  }

  async exportSession(sessionId: string): Promise<MemoryGraphArtifact> {
    return (await this.#session(checkSessionId(sessionId))).graph.artifact();
  }

  async importSession(input: MemoryGraphArtifact): Promise<void> {
    const artifact = validateArtifact(input);
    const sessionId = artifact.session_id;
    const followed = await this.#session(sessionId);
    const graph = followed.graph;
    const keep = new Set([
      ...artifact.nodes.map((node) => nodeKey(sessionId, node.id)),
      ...artifact.edges.map((edge) => edgeKey(edge)),
    ]);
    const what = `import of session ${sessionId}`;
    // Old edges, then old nodes, then new nodes, then new edges: no edge is ever stored without its nodes.
    const oldEdges = graph
      .edges()
      .map((edge) => edgeKey(edge))
      .filter((key) => !keep.has(key));
    await this.#deleteKeys(followed, oldEdges, what);
    const oldNodes = graph
      .nodes()
      .map((node) => nodeKey(sessionId, node.id))
      .filter((key) => !keep.has(key));
    await this.#deleteKeys(followed, oldNodes, what);
    await this.#batches(artifact.nodes, what, sessionId, async (node) => {
      const key = nodeKey(sessionId, node.id);
      this.#applyNode(followed, key, await this.kv.put(key, encoder.encode(JSON.stringify(node))), node);
    });
    await this.#batches(artifact.edges, what, sessionId, async (edge) => {
      const key = edgeKey(edge);
      this.#applyEdge(followed, key, await this.kv.put(key, encoder.encode(JSON.stringify(edge))), edge);
    });
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#sessions.clear();
  }

  // ── the in-memory copy ────────────────────────────────────────────────

  async #session(sessionId: string): Promise<Followed> {
    if (this.#closed) {
      throw new MemoryGraphStoreError("unavailable", "nats", "nats memory graph: the store is closed", { sessionId });
    }
    return this.#sessions.get(sessionId);
  }

  /**
   * Loads the session: an ordered consumer on its keys, delivering the last
   * value of each (the bulk read), then every later write, whoever makes it.
   * Resolves once the bulk read is applied.
   */
  async #follow(sessionId: string): Promise<Followed> {
    const followed = new Followed(sessionId);
    const prefix = `$KV.${MEMORY_GRAPH_BUCKET}.`;
    try {
      await withDeadline("nats", `nats memory graph load of session ${sessionId}`, this.timeoutMs, sessionId, () => {
        return new Promise<void>((resolve, reject) => {
          void (async () => {
            const consumer = await this.js.consumers.getPushConsumer(this.stream, {
              filter_subjects: `${prefix}${sessionId}.>`,
              deliver_policy: DeliverPolicy.LastPerSubject,
            });
            const pending = (await consumer.info(true)).num_pending;
            const messages = await consumer.consume({
              callback: (msg: JsMsg) => {
                this.#onMessage(followed, msg.subject.slice(prefix.length), msg);
                if (msg.info.pending === 0) resolve();
              },
            });
            followed.onStop(() => void messages.stop());
            // Following ended without being stopped (the connection closed): the copy would go
            // stale, so it is dropped and the session's next use loads it again.
            void messages.closed().then(() => {
              if (!followed.stopped) this.#sessions.forget(sessionId, followed);
            });
            if (pending === 0) resolve();
          })().catch(reject);
        });
      });
    } catch (error) {
      followed.stop();
      throw error;
    }
    return followed;
  }

  /** One entry of a followed session's keys: applied unless older than what the copy holds. */
  #onMessage(followed: Followed, key: string, msg: JsMsg): void {
    const operation = msg.headers?.get("KV-Operation");
    const deleted = operation === "DEL" || operation === "PURGE";
    const [, type, token] = key.split(".");
    if (deleted) {
      if (!followed.advance(key, msg.seq)) return;
      if (type === "n" && token) followed.graph.deleteNode(decodeNodeId(token));
      const edge = followed.edgeAt.get(key);
      if (type === "e" && edge) {
        followed.graph.deleteEdge(edge);
        followed.edgeAt.delete(key);
      }
      return;
    }
    if (type === "n") {
      const node = this.#decode(key, msg, MemoryNode, (value) =>
        value.session_id !== followed.graph.sessionId || token !== encodeNodeId(value.id)
          ? `node '${value.id}' of session '${value.session_id}' is not the one its key names`
          : null,
      );
      if (node) this.#applyNode(followed, key, msg.seq, node);
    } else if (type === "e") {
      const edge = this.#decode(key, msg, MemoryEdge, (value) =>
        edgeKey(value) !== key ? `edge '${value.from}' → '${value.to}' is not the one its key names` : null,
      );
      if (edge) this.#applyEdge(followed, key, msg.seq, edge);
    } else {
      this.#invalid(key, msg, "not a node key (<session>.n.<id>) nor an edge key (<session>.e.<hash>)");
    }
  }

  /** Applies the node at `revision` unless the copy holds a newer entry of its key; returns the stored copy if applied. */
  #applyNode(followed: Followed, key: string, revision: number, node: MemoryNode): MemoryNode | undefined {
    if (!followed.advance(key, revision)) return undefined;
    return followed.graph.putNode(node);
  }

  #applyEdge(followed: Followed, key: string, revision: number, edge: MemoryEdge): void {
    if (!followed.advance(key, revision)) return;
    followed.graph.putEdge(edge);
    followed.edgeAt.set(key, edge);
  }

  /** Deletes the keys (in batches) and removes what they held from the copy. */
  async #deleteKeys(followed: Followed, keys: string[], what: string): Promise<void> {
    await this.#batches(keys, what, followed.graph.sessionId, async (key) => {
      await this.kv.delete(key);
      // The deletion's revision is not returned: the key's last known one guards against older copies.
      const [, type, token] = key.split(".");
      if (type === "n" && token) followed.graph.deleteNode(decodeNodeId(token));
      const edge = followed.edgeAt.get(key);
      if (type === "e" && edge) {
        followed.graph.deleteEdge(edge);
        followed.edgeAt.delete(key);
      }
    });
  }

  /** Runs `write` on every item, WRITE_BATCH at a time, each batch within the deadline. */
  async #batches<T>(items: readonly T[], what: string, sessionId: string, write: (item: T) => Promise<void>) {
    for (let start = 0; start < items.length; start += WRITE_BATCH) {
      const batch = items.slice(start, start + WRITE_BATCH);
      await this.#call(what, sessionId, () => Promise.all(batch.map(write)));
    }
  }

  #decode<T>(key: string, msg: JsMsg, schema: z.ZodType<T>, misplaced: (value: T) => string | null): T | undefined {
    let problem: string;
    try {
      const parsed = schema.safeParse(JSON.parse(decoder.decode(msg.data)));
      if (parsed.success) {
        const wrong = misplaced(parsed.data);
        if (!wrong) return parsed.data;
        problem = wrong;
      } else {
        problem = zodProblems(parsed.error).join("; ");
      }
    } catch (error) {
      problem = `not JSON (${messageOf(error)})`;
    }
    this.#invalid(key, msg, problem);
    return undefined;
  }

  #invalid(key: string, msg: JsMsg, problem: string): void {
    const seen = `${key}@${msg.seq}`;
    if (this.#reported.has(seen)) return;
    if (this.#reported.size > 1_000) this.#reported.clear();
    this.#reported.add(seen);
    try {
      this.#onInvalid(new CorruptValueError(MEMORY_GRAPH_BUCKET, key, msg.seq, problem), msg.data);
    } catch {
      // A reporter that throws must not stop the session being followed.
    }
  }

  #call<T>(what: string, sessionId: string, work: () => Promise<T>): Promise<T> {
    return withDeadline("nats", `nats memory graph ${what} (session ${sessionId})`, this.timeoutMs, sessionId, work);
  }
}
