/**
 * The memory graph in the NATS KV bucket `conclave_memory_graph`: the
 * default backend, since every worker is on the bus already. Its keys are
 * laid out in natsGraphKeys.ts; each session is followed into an in-memory
 * copy (natsFollowedSession.ts) from its entries (natsGraphEntries.ts).
 */
import { DeliverPolicy, type JetStreamClient, type JsMsg, jetstream } from "@nats-io/jetstream";
import { type KV, Kvm } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/nats-core";
import { encodeRecord } from "../../bus/codec.ts";
import { deadLetter } from "../../bus/deadLetters.ts";
import { type CorruptValueError, KV_DEAD_LETTERS } from "../../bus/jsonKv.ts";
import { orderedConsumer, releaseConsumer } from "../../eventlog/consumers.ts";
import { checkBucketReplicas, configuredReplicas } from "../../nats/replicas.ts";
import { FollowedSession } from "./natsFollowedSession.ts";
import { GraphEntryReader } from "./natsGraphEntries.ts";
import { edgeKey, MEMORY_GRAPH_BUCKET, nodeKey } from "./natsGraphKeys.ts";
import { SessionCache } from "./sessionGraph.ts";
import {
  checkEdge,
  checkSessionId,
  DEFAULT_MEMORY_GRAPH_SESSIONS,
  DEFAULT_MEMORY_GRAPH_TIMEOUT_MS,
  danglingEdge,
  graphStoreCall,
  type MemoryGraphStore,
  MemoryGraphStoreError,
  nextNode,
} from "./store.ts";
import {
  type MemoryEdge,
  type MemoryGraphArtifact,
  type MemoryNode,
  type MemoryNodeInput,
  type MemoryNodeKind,
  validateArtifact,
} from "./types.ts";

/** Largest stored value: a node of 4 000 characters with a 1 536-number embedding fits many times over. */
const MAX_VALUE_BYTES = 256 * 1024;

/** KV writes in flight at once during an import or a removal. */
const WRITE_BATCH = 64;

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
 * The memory graph in NATS KV. The NATS connection is the caller's: `close()`
 * stops following sessions and leaves it open. Writes are last-writer-wins
 * per key; an import or a removal is several writes, not a transaction (a
 * failure midway leaves part of it done: import again, or remove again).
 */
export class NatsMemoryGraphStore implements MemoryGraphStore {
  readonly backend = "nats";
  readonly #sessions: SessionCache<FollowedSession>;
  readonly #entries: GraphEntryReader;
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
    this.#entries = new GraphEntryReader(
      onInvalid
        ? (error) => onInvalid(error)
        : (error, raw) => {
            void deadLetter(this.js, KV_DEAD_LETTERS, {
              subject: `$KV.${MEMORY_GRAPH_BUCKET}.${error.key}`,
              data: raw,
              code: error.code,
              reason: error.message,
            });
          },
    );
  }

  /** Opens (creating if missing) the bucket; a MemoryGraphStoreError when NATS refuses or does not answer in time. */
  static async open(nc: NatsConnection, options: NatsMemoryGraphStoreOptions = {}): Promise<NatsMemoryGraphStore> {
    const timeoutMs = options.timeoutMs ?? DEFAULT_MEMORY_GRAPH_TIMEOUT_MS;
    const what = `nats memory graph: cannot open KV bucket ${MEMORY_GRAPH_BUCKET}`;
    const replicas = configuredReplicas();
    const kv = await graphStoreCall("nats", what, timeoutMs, undefined, () =>
      // history 1: a node or an edge is replaced whole, earlier versions are of no use.
      new Kvm(nc).create(MEMORY_GRAPH_BUCKET, { history: 1, maxValueSize: MAX_VALUE_BYTES, replicas }),
    );
    // An existing bucket is opened as it is: its replicas are checked, never changed.
    await checkBucketReplicas(kv, MEMORY_GRAPH_BUCKET, replicas);
    return new NatsMemoryGraphStore(kv, jetstream(nc), `KV_${MEMORY_GRAPH_BUCKET}`, timeoutMs, options);
  }

  async upsertNode(input: MemoryNodeInput): Promise<MemoryNode> {
    const sessionId = checkSessionId(String(input?.session_id));
    const followed = await this.#session(sessionId);
    const node = nextNode(input, followed.graph.node(input.id));
    const key = nodeKey(sessionId, node.id);
    const revision = await this.#call(`upsert of node '${node.id}'`, sessionId, () =>
      this.kv.put(key, encodeRecord(node)),
    );
    return followed.applyNode(key, revision, node) ?? followed.graph.node(node.id) ?? node;
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
      this.kv.put(key, encodeRecord(edge)),
    );
    followed.applyEdge(key, revision, edge);
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
      followed.applyNode(key, await this.kv.put(key, encodeRecord(node)), node);
    });
    await this.#batches(artifact.edges, what, sessionId, async (edge) => {
      const key = edgeKey(edge);
      followed.applyEdge(key, await this.kv.put(key, encodeRecord(edge)), edge);
    });
  }

  /** Resolves once the sessions dropped from memory so far have stopped following (their consumers deleted). */
  settled(): Promise<void> {
    return this.#sessions.settled();
  }

  dropSession(sessionId: string): Promise<boolean> {
    return this.#sessions.drop(sessionId);
  }

  /** Drops the copy only: the erasing runner overwrites the session's keys itself. */
  async eraseSession(sessionId: string): Promise<number> {
    await this.dropSession(sessionId);
    return 0;
  }

  /** Stops following every session and deletes their consumers. */
  async close(): Promise<void> {
    this.#closed = true;
    await this.#sessions.clear();
  }

  // ── the in-memory copy ────────────────────────────────────────────────

  async #session(sessionId: string): Promise<FollowedSession> {
    if (this.#closed) {
      throw new MemoryGraphStoreError("unavailable", "nats", "nats memory graph: the store is closed", { sessionId });
    }
    return this.#sessions.get(sessionId);
  }

  /**
   * Loads the session: an ordered consumer on its keys, delivering the last
   * value of each (the bulk read), then every later write, whoever makes it.
   * Resolves once the bulk read is applied. Dropping the session deletes the
   * consumer; one left by a process that died expires after EPHEMERAL_INACTIVE_MS.
   */
  async #follow(sessionId: string): Promise<FollowedSession> {
    const followed = new FollowedSession(sessionId);
    const prefix = `$KV.${MEMORY_GRAPH_BUCKET}.`;
    try {
      await graphStoreCall("nats", `nats memory graph load of session ${sessionId}`, this.timeoutMs, sessionId, () => {
        return new Promise<void>((resolve, reject) => {
          void (async () => {
            const consumer = await orderedConsumer(this.js, this.stream, {
              filter_subjects: `${prefix}${sessionId}.>`,
              deliver_policy: DeliverPolicy.LastPerSubject,
            });
            const pending = (await consumer.info(true)).num_pending;
            const messages = await consumer.consume({
              callback: (msg: JsMsg) => {
                this.#entries.apply(followed, msg.subject.slice(prefix.length), msg);
                if (msg.info.pending === 0) resolve();
              },
            });
            followed.onStop(async () => {
              await messages.close().catch(() => {});
              await releaseConsumer(consumer);
            });
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
      void followed.stop();
      throw error;
    }
    return followed;
  }

  /** Deletes the keys (in batches) and removes what they held from the copy. */
  async #deleteKeys(followed: FollowedSession, keys: string[], what: string): Promise<void> {
    await this.#batches(keys, what, followed.graph.sessionId, async (key) => {
      await this.kv.delete(key);
      // The deletion's revision is not returned: the key's last known one guards against older copies.
      followed.removeKey(key);
    });
  }

  /** Runs `write` on every item, WRITE_BATCH at a time, each batch within the deadline. */
  async #batches<T>(items: readonly T[], what: string, sessionId: string, write: (item: T) => Promise<void>) {
    for (let start = 0; start < items.length; start += WRITE_BATCH) {
      const batch = items.slice(start, start + WRITE_BATCH);
      await this.#call(what, sessionId, () => Promise.all(batch.map(write)));
    }
  }

  #call<T>(what: string, sessionId: string, work: () => Promise<T>): Promise<T> {
    return graphStoreCall("nats", `nats memory graph ${what} (session ${sessionId})`, this.timeoutMs, sessionId, work);
  }
}
