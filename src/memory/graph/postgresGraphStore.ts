/**
 * The memory graph in PostgreSQL, with node-postgres: one row per node in
 * `conclave_memory_nodes` (the whole node as jsonb, kind and updated_at as
 * columns) and one per edge in `conclave_memory_edges`, whose ends reference
 * their nodes (removing a node removes its edges). Parameterised queries only.
 */
import { DatabaseError, Pool, type PoolClient } from "pg";
import { FormatTooNewError, parseRecord, withFormat } from "../../contracts/format.ts";
import { describeIssues } from "../../contracts/issues.ts";
import { checkPostgresUrl, migrateUnderLock } from "../../stores/postgres.ts";
import { redactUrl, scrubbed } from "../../stores/redact.ts";
import { SessionCache, SessionGraph } from "./sessionGraph.ts";
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
  GRAPH_ISSUES,
  InvalidMemoryGraphError,
  type MemoryEdge,
  type MemoryGraphArtifact,
  MemoryNode,
  type MemoryNodeInput,
  type MemoryNodeKind,
  validateArtifact,
} from "./types.ts";

/** The table of nodes (created when missing). */
export const POSTGRES_MEMORY_NODES_TABLE = "conclave_memory_nodes";
/** The table of edges (created when missing). */
export const POSTGRES_MEMORY_EDGES_TABLE = "conclave_memory_edges";

/**
 * The advisory lock held while migrating: `CREATE TABLE IF NOT EXISTS` is not
 * safe against itself (two processes starting at once can both find no table),
 * so they take turns. Any fixed number; this one is "memgraph" read as base-36 digits, mod 2^31.
 */
const MIGRATION_LOCK = 1_372_281_617;

const MIGRATION = [
  `CREATE TABLE IF NOT EXISTS ${POSTGRES_MEMORY_NODES_TABLE} (
  session_id text NOT NULL,
  id text NOT NULL,
  kind text NOT NULL,
  body jsonb NOT NULL,
  updated_at bigint NOT NULL,
  PRIMARY KEY (session_id, id)
)`,
  `CREATE TABLE IF NOT EXISTS ${POSTGRES_MEMORY_EDGES_TABLE} (
  session_id text NOT NULL,
  from_id text NOT NULL,
  to_id text NOT NULL,
  kind text NOT NULL,
  PRIMARY KEY (session_id, from_id, to_id, kind),
  FOREIGN KEY (session_id, from_id) REFERENCES ${POSTGRES_MEMORY_NODES_TABLE} (session_id, id) ON DELETE CASCADE,
  FOREIGN KEY (session_id, to_id) REFERENCES ${POSTGRES_MEMORY_NODES_TABLE} (session_id, id) ON DELETE CASCADE
)`,
  // The cascade from a node to the edges pointing at it.
  `CREATE INDEX IF NOT EXISTS ${POSTGRES_MEMORY_EDGES_TABLE}_to ON ${POSTGRES_MEMORY_EDGES_TABLE} (session_id, to_id)`,
  // The retention's sweep (maxAge.ts) finds the oldest nodes by it.
  `CREATE INDEX IF NOT EXISTS ${POSTGRES_MEMORY_NODES_TABLE}_updated ON ${POSTGRES_MEMORY_NODES_TABLE} (updated_at)`,
];

const UPSERT_NODE = `INSERT INTO ${POSTGRES_MEMORY_NODES_TABLE} (session_id, id, kind, body, updated_at)
VALUES ($1, $2, $3, $4::jsonb, $5)
ON CONFLICT (session_id, id) DO UPDATE SET kind = excluded.kind, body = excluded.body, updated_at = excluded.updated_at`;

/** Many nodes in one statement: parallel arrays, unnested. */
const INSERT_NODES = `INSERT INTO ${POSTGRES_MEMORY_NODES_TABLE} (session_id, id, kind, body, updated_at)
SELECT $1, id, kind, body, updated_at FROM unnest($2::text[], $3::text[], $4::jsonb[], $5::bigint[]) AS n(id, kind, body, updated_at)`;

const INSERT_EDGE = `INSERT INTO ${POSTGRES_MEMORY_EDGES_TABLE} (session_id, from_id, to_id, kind)
VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`;

const INSERT_EDGES = `INSERT INTO ${POSTGRES_MEMORY_EDGES_TABLE} (session_id, from_id, to_id, kind)
SELECT $1, from_id, to_id, kind FROM unnest($2::text[], $3::text[], $4::text[]) AS e(from_id, to_id, kind)
ON CONFLICT DO NOTHING`;

const SELECT_NODES = `SELECT id, body FROM ${POSTGRES_MEMORY_NODES_TABLE} WHERE session_id = $1`;
const SELECT_EDGES = `SELECT from_id, to_id, kind FROM ${POSTGRES_MEMORY_EDGES_TABLE} WHERE session_id = $1`;
const DELETE_NODE = `DELETE FROM ${POSTGRES_MEMORY_NODES_TABLE} WHERE session_id = $1 AND id = $2`;
const DELETE_SESSION_NODES = `DELETE FROM ${POSTGRES_MEMORY_NODES_TABLE} WHERE session_id = $1`;
const DELETE_SESSION_EDGES = `DELETE FROM ${POSTGRES_MEMORY_EDGES_TABLE} WHERE session_id = $1`;
/** At most `$2` nodes not changed since `$1` (epoch ms), oldest first; their edges go by the cascade. */
const SWEEP_NODES = `DELETE FROM ${POSTGRES_MEMORY_NODES_TABLE} WHERE (session_id, id) IN (
  SELECT session_id, id FROM ${POSTGRES_MEMORY_NODES_TABLE} WHERE updated_at < $1 ORDER BY updated_at LIMIT $2)`;

/** Rows per statement of an import. */
const IMPORT_BATCH = 1_000;

/** Options of the PostgreSQL store. */
export interface PostgresMemoryGraphStoreOptions {
  /**
   * Longest one call may take, waiting for a connection included (also the
   * server's `statement_timeout`). Default DEFAULT_MEMORY_GRAPH_TIMEOUT_MS (3 s).
   */
  timeoutMs?: number;
  /** Most connections the store's pool opens. Default 4. */
  maxConnections?: number;
  /** Sessions kept in memory at once. Default DEFAULT_MEMORY_GRAPH_SESSIONS. */
  maxSessions?: number;
  /** Told about a stored node that fails its schema: it is left out of the in-memory copy. Default: nothing. */
  onInvalid?: (sessionId: string, id: string, problem: string) => void;
}

/**
 * Creates the memory graph's tables and index unless they exist, one process
 * at a time (an advisory lock held for the transaction).
 */
export async function migrateMemoryGraph(client: PoolClient): Promise<void> {
  await migrateUnderLock(client, MIGRATION_LOCK, MIGRATION);
}

/**
 * The memory graph in PostgreSQL through a small pool. Each write is one
 * transaction (an import too: all of it or nothing). The in-memory copy of a
 * session follows this store's writes only: another process's writes to a
 * session this store has loaded are not seen until the session is dropped
 * from memory (past `maxSessions`) and loaded again.
 */
export class PostgresMemoryGraphStore implements MemoryGraphStore {
  readonly backend = "postgres";
  readonly #sessions: SessionCache<SessionGraph>;

  private constructor(
    private readonly pool: Pool,
    private readonly url: string,
    private readonly timeoutMs: number,
    private readonly options: PostgresMemoryGraphStoreOptions,
  ) {
    this.#sessions = new SessionCache(options.maxSessions ?? DEFAULT_MEMORY_GRAPH_SESSIONS, (sessionId) =>
      this.#load(sessionId),
    );
  }

  /**
   * A store on the database at `url` (`postgres://user[:password]@host:port/db`),
   * its tables created if missing: a MemoryGraphStoreError when the server
   * cannot be reached, a "config" ConclaveError when the URL is not a PostgreSQL URL.
   */
  static async open(url: string, options: PostgresMemoryGraphStoreOptions = {}): Promise<PostgresMemoryGraphStore> {
    checkPostgresUrl(url, "postgres memory graph");
    const timeoutMs = options.timeoutMs ?? DEFAULT_MEMORY_GRAPH_TIMEOUT_MS;
    const pool = new Pool({
      connectionString: url,
      max: options.maxConnections ?? 4,
      // pg's default is to wait forever for a connection.
      connectionTimeoutMillis: timeoutMs,
      // The server cancels a statement that runs longer (the deadline alone would only abandon it).
      statement_timeout: timeoutMs,
      idleTimeoutMillis: 30_000,
      // An idle pool does not keep the process alive.
      allowExitOnIdle: true,
    });
    // An idle connection the server dropped (a restart) is reported here; without a listener the process would crash.
    pool.on("error", () => {});
    const store = new PostgresMemoryGraphStore(pool, url, timeoutMs, options);
    try {
      await store.#transaction("migration", undefined, migrateMemoryGraph);
    } catch (error) {
      await store.close();
      throw error;
    }
    return store;
  }

  async upsertNode(input: MemoryNodeInput): Promise<MemoryNode> {
    const sessionId = checkSessionId(String(input?.session_id));
    const graph = await this.#session(sessionId);
    const node = nextNode(input, graph.node(input.id));
    await this.#call(`upsert of node '${node.id}'`, sessionId, () =>
      this.pool.query(UPSERT_NODE, [sessionId, node.id, node.kind, JSON.stringify(withFormat(node)), node.updated_at]),
    );
    return graph.putNode(node);
  }

  async node(sessionId: string, id: string): Promise<MemoryNode | null> {
    return (await this.#session(checkSessionId(sessionId))).node(id) ?? null;
  }

  async nodes(sessionId: string, kind?: MemoryNodeKind): Promise<readonly MemoryNode[]> {
    return (await this.#session(checkSessionId(sessionId))).nodes(kind);
  }

  async addEdge(input: MemoryEdge): Promise<void> {
    const edge = checkEdge(input);
    const graph = await this.#session(edge.session_id);
    const missing = [...new Set([edge.from, edge.to])].filter((id) => !graph.node(id));
    if (missing.length > 0) throw danglingEdge(edge, missing);
    if (graph.hasEdge(edge)) return;
    try {
      await this.#call(`add of edge '${edge.from}' → '${edge.to}'`, edge.session_id, () =>
        this.pool.query(INSERT_EDGE, [edge.session_id, edge.from, edge.to, edge.kind]),
      );
    } catch (error) {
      // 23503, foreign_key_violation: another process removed an end since this copy was loaded.
      if (
        error instanceof MemoryGraphStoreError &&
        error.cause instanceof DatabaseError &&
        error.cause.code === "23503"
      ) {
        throw new InvalidMemoryGraphError(`memory edge of session '${edge.session_id}'`, [
          `'${edge.from}' → '${edge.to}' (${edge.kind}): an end was removed by another process`,
        ]);
      }
      throw error;
    }
    graph.putEdge(edge);
  }

  async edges(sessionId: string): Promise<readonly MemoryEdge[]> {
    return (await this.#session(checkSessionId(sessionId))).edges();
  }

  async removeNode(sessionId: string, id: string): Promise<boolean> {
    const graph = await this.#session(checkSessionId(sessionId));
    // The edges go with it (ON DELETE CASCADE).
    const result = await this.#call(`removal of node '${id}'`, sessionId, () =>
      this.pool.query(DELETE_NODE, [sessionId, id]),
    );
    const had = graph.node(id) !== undefined;
    graph.deleteNode(id);
    return had || (result.rowCount ?? 0) > 0;
  }

  async exportSession(sessionId: string): Promise<MemoryGraphArtifact> {
    return (await this.#session(checkSessionId(sessionId))).artifact();
  }

  async importSession(input: MemoryGraphArtifact): Promise<void> {
    const artifact = validateArtifact(input);
    const sessionId = artifact.session_id;
    const graph = await this.#session(sessionId);
    await this.#transaction(`import of session ${sessionId}`, sessionId, async (client) => {
      await client.query("BEGIN");
      try {
        // The session's edges go with its nodes (ON DELETE CASCADE).
        await client.query(DELETE_SESSION_NODES, [sessionId]);
        for (let start = 0; start < artifact.nodes.length; start += IMPORT_BATCH) {
          const batch = artifact.nodes.slice(start, start + IMPORT_BATCH);
          await client.query(INSERT_NODES, [
            sessionId,
            batch.map((node) => node.id),
            batch.map((node) => node.kind),
            batch.map((node) => JSON.stringify(withFormat(node))),
            batch.map((node) => node.updated_at),
          ]);
        }
        for (let start = 0; start < artifact.edges.length; start += IMPORT_BATCH) {
          const batch = artifact.edges.slice(start, start + IMPORT_BATCH);
          await client.query(INSERT_EDGES, [
            sessionId,
            batch.map((edge) => edge.from),
            batch.map((edge) => edge.to),
            batch.map((edge) => edge.kind),
          ]);
        }
        await client.query("COMMIT");
      } catch (error) {
        await client.query("ROLLBACK").catch(() => {});
        throw error;
      }
    });
    graph.clear();
    for (const node of artifact.nodes) graph.putNode(node);
    for (const edge of artifact.edges) graph.putEdge(edge);
  }

  dropSession(sessionId: string): Promise<boolean> {
    return this.#sessions.drop(sessionId);
  }

  /**
   * Deletes the session's rows (edges, then nodes: one transaction), then drops
   * its copy, so no later use loads them again. PostgreSQL keeps the deleted
   * row versions in the tables' files until a vacuum reuses their space.
   */
  async eraseSession(sessionId: string): Promise<number> {
    checkSessionId(sessionId);
    const removed = await this.#transaction(`erase of session ${sessionId}`, sessionId, async (client) => {
      await client.query("BEGIN");
      try {
        const edges = await client.query(DELETE_SESSION_EDGES, [sessionId]);
        const nodes = await client.query(DELETE_SESSION_NODES, [sessionId]);
        await client.query("COMMIT");
        return (edges.rowCount ?? 0) + (nodes.rowCount ?? 0);
      } catch (error) {
        await client.query("ROLLBACK").catch(() => {});
        throw error;
      }
    });
    await this.dropSession(sessionId);
    return removed;
  }

  /**
   * Deletes at most `limit` nodes not changed since `beforeMs` (epoch ms), with their edges: how
   * many (the retention's sweep, src/memory/graph/maxAge.ts). Sessions in memory keep their copy:
   * the sweep's wrapper leaves those nodes out of every read. Deleted rows leave their bytes in
   * the table's pages until PostgreSQL vacuums them.
   */
  async sweep(beforeMs: number, limit: number): Promise<number> {
    const result = await this.#call("sweep of old nodes", undefined, () =>
      this.pool.query(SWEEP_NODES, [beforeMs, limit]),
    );
    return result.rowCount ?? 0;
  }

  async close(): Promise<void> {
    await this.#sessions.clear();
    if (!this.pool.ended && !this.pool.ending) await this.pool.end();
  }

  /** The session's in-memory copy, loaded (two queries) on first use. */
  #session(sessionId: string): Promise<SessionGraph> {
    if (this.pool.ended || this.pool.ending) {
      return Promise.reject(
        new MemoryGraphStoreError("unavailable", "postgres", "postgres memory graph: the store is closed", {
          sessionId,
        }),
      );
    }
    return this.#sessions.get(sessionId);
  }

  async #load(sessionId: string): Promise<SessionGraph> {
    const [nodes, edges] = await this.#call(`load of session ${sessionId}`, sessionId, () =>
      Promise.all([
        this.pool.query<{ id: string; body: unknown }>(SELECT_NODES, [sessionId]),
        this.pool.query<{ from_id: string; to_id: string; kind: string }>(SELECT_EDGES, [sessionId]),
      ]),
    );
    const graph = new SessionGraph(sessionId);
    for (const row of nodes.rows) {
      const parsed = parseRecord(MemoryNode, row.body, `memory node ${row.id}`);
      const problem = !parsed.success
        ? parsed.error instanceof FormatTooNewError
          ? parsed.error.message
          : describeIssues(parsed.error, { ...GRAPH_ISSUES, join: "; " })
        : parsed.data.id !== row.id || parsed.data.session_id !== sessionId
          ? `body is node '${parsed.data.id}' of session '${parsed.data.session_id}'`
          : null;
      if (parsed.success && !problem) graph.putNode(parsed.data);
      else this.options.onInvalid?.(sessionId, row.id, problem ?? "invalid");
    }
    for (const row of edges.rows) {
      // Rows whose node was left out above are left out too.
      if (graph.node(row.from_id) && graph.node(row.to_id)) {
        graph.putEdge({ session_id: sessionId, from: row.from_id, to: row.to_id, kind: row.kind });
      }
    }
    return graph;
  }

  /** Runs `work` on one connection of the pool (released, or destroyed after a failure). */
  #transaction<T>(what: string, sessionId: string | undefined, work: (client: PoolClient) => Promise<T>): Promise<T> {
    return this.#call(what, sessionId, async () => {
      const client = await this.pool.connect();
      try {
        const result = await work(client);
        client.release();
        return result;
      } catch (error) {
        // Destroyed, not returned to the pool: the failure may have been the connection's.
        client.release(true);
        throw error;
      }
    });
  }

  /** Runs `work` within the deadline; a failure is a MemoryGraphStoreError naming the call and the (redacted) URL. */
  async #call<T>(what: string, sessionId: string | undefined, work: () => Promise<T>): Promise<T> {
    const where = `postgres memory graph ${what} on ${redactUrl(this.url)}`;
    try {
      return await graphStoreCall("postgres", where, this.timeoutMs, sessionId, work, (error) =>
        scrubbed(error, this.url),
      );
    } catch (error) {
      // SQLSTATE class 22, data exception: the server refuses this value (jsonb cannot hold \u0000), retrying will not help.
      if (error instanceof MemoryGraphStoreError && error.cause instanceof DatabaseError) {
        if (error.cause.code?.startsWith("22")) {
          throw new MemoryGraphStoreError("invalid_request", "postgres", error.message, {
            cause: error.cause,
            sessionId,
          });
        }
      }
      throw error;
    }
  }
}
