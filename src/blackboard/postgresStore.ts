/**
 * Blackboards in PostgreSQL, one row per session in `conclave_blackboards`
 * (a jsonb column), with node-postgres.
 */
import { DatabaseError, Pool } from "pg";
import { withDeadline } from "../deadline.ts";
import { checkPostgresUrl, migrateUnderLock } from "../stores/postgres.ts";
import { redactUrl, scrubbed } from "../stores/redact.ts";
import {
  type BlackboardStore,
  BlackboardStoreError,
  checkSessionId,
  checkStoredBlackboard,
  DEFAULT_BLACKBOARD_TIMEOUT_MS,
  encodeBlackboard,
  noAnswer,
} from "./store.ts";

/** The table of blackboards (created when missing). */
export const POSTGRES_BLACKBOARD_TABLE = "conclave_blackboards";

/**
 * The advisory lock held while creating the table: `CREATE TABLE IF NOT
 * EXISTS` is not safe against itself (two runners starting at once can both
 * find no table and one then fails on a duplicate catalog row), so creators
 * take turns. Any fixed number; this one is "conclave" read as base-36 digits, mod 2^31.
 */
const CREATE_LOCK = 1_887_171_146;

const CREATE_TABLE = `CREATE TABLE IF NOT EXISTS ${POSTGRES_BLACKBOARD_TABLE} (
  session_id text PRIMARY KEY,
  blackboard jsonb NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now()
)`;

const UPSERT = `INSERT INTO ${POSTGRES_BLACKBOARD_TABLE} (session_id, blackboard, updated_at)
VALUES ($1, $2::jsonb, now())
ON CONFLICT (session_id) DO UPDATE SET blackboard = excluded.blackboard, updated_at = excluded.updated_at`;

const SELECT = `SELECT blackboard FROM ${POSTGRES_BLACKBOARD_TABLE} WHERE session_id = $1`;
const DELETE = `DELETE FROM ${POSTGRES_BLACKBOARD_TABLE} WHERE session_id = $1`;
/** At most `$2` rows not saved since `$1`, oldest first (a bounded sweep: the next one goes on). */
const SWEEP = `DELETE FROM ${POSTGRES_BLACKBOARD_TABLE} WHERE session_id IN (
  SELECT session_id FROM ${POSTGRES_BLACKBOARD_TABLE} WHERE updated_at < $1 ORDER BY updated_at LIMIT $2)`;

/** Options of the PostgreSQL store. */
export interface PostgresBlackboardStoreOptions {
  /** Longest one call may take, waiting for a connection included. Default DEFAULT_BLACKBOARD_TIMEOUT_MS (3 s). */
  timeoutMs?: number;
  /** Most connections the store's pool opens. Default 2: a runner saves a blackboard at a time per session. */
  maxConnections?: number;
}

/**
 * Blackboards in PostgreSQL through a small pool. The table is created (if
 * missing) when the store opens. A value that is not a JSON object (jsonb can
 * hold any JSON) fails its reads with corrupt_value and is left in place.
 */
export class PostgresBlackboardStore implements BlackboardStore {
  readonly backend = "postgres";

  private constructor(
    private readonly pool: Pool,
    private readonly url: string,
    private readonly timeoutMs: number,
  ) {}

  /**
   * A store on the database at `url` (`postgres://user[:password]@host:port/db`),
   * its table created if missing: an "unavailable" BlackboardStoreError when
   * the server cannot be reached, a "config" ConclaveError when the URL is not
   * a PostgreSQL URL.
   */
  static async open(url: string, options: PostgresBlackboardStoreOptions = {}): Promise<PostgresBlackboardStore> {
    checkPostgresUrl(url, "postgres blackboard");
    const timeoutMs = options.timeoutMs ?? DEFAULT_BLACKBOARD_TIMEOUT_MS;
    const pool = new Pool({
      connectionString: url,
      max: options.maxConnections ?? 2,
      // pg's default is to wait forever for a connection.
      connectionTimeoutMillis: timeoutMs,
      idleTimeoutMillis: 30_000,
      // An idle pool does not keep the process alive.
      allowExitOnIdle: true,
    });
    // An idle connection the server dropped (a restart) is reported here; without a listener the process would crash.
    pool.on("error", () => {});
    const store = new PostgresBlackboardStore(pool, url, timeoutMs);
    try {
      await store.#call("table creation", undefined, async () => {
        const client = await pool.connect();
        try {
          await migrateUnderLock(client, CREATE_LOCK, [CREATE_TABLE]);
          client.release();
        } catch (error) {
          // Destroyed, not returned to the pool: the failure may have been the connection's.
          client.release(true);
          throw error;
        }
      });
    } catch (error) {
      await store.close();
      throw error;
    }
    return store;
  }

  async load(sessionId: string): Promise<Record<string, unknown> | null> {
    checkSessionId("postgres", sessionId);
    const result = await this.#call(`load of session ${sessionId}`, sessionId, () =>
      this.pool.query<{ blackboard: unknown }>(SELECT, [sessionId]),
    );
    const row = result.rows[0];
    return row ? checkStoredBlackboard("postgres", sessionId, row.blackboard) : null;
  }

  async save(sessionId: string, blackboard: Record<string, unknown>): Promise<void> {
    checkSessionId("postgres", sessionId);
    const text = encodeBlackboard("postgres", sessionId, blackboard);
    await this.#call(`save of session ${sessionId}`, sessionId, () => this.pool.query(UPSERT, [sessionId, text]));
  }

  async erase(sessionId: string): Promise<boolean> {
    checkSessionId("postgres", sessionId);
    const result = await this.#call(`erase of session ${sessionId}`, sessionId, () =>
      this.pool.query(DELETE, [sessionId]),
    );
    return (result.rowCount ?? 0) > 0;
  }

  /**
   * Deletes the blackboards not saved since `before`, at most `limit` of them (the retention's
   * sweep, run by a runner): how many. Rows deleted leave their bytes in the table's pages until
   * PostgreSQL vacuums them.
   */
  async sweep(before: Date, limit = 1_000): Promise<number> {
    const result = await this.#call("sweep of old blackboards", undefined, () =>
      this.pool.query(SWEEP, [before, limit]),
    );
    return result.rowCount ?? 0;
  }

  async close(): Promise<void> {
    if (!this.pool.ended && !this.pool.ending) await this.pool.end();
  }

  /** Runs `work` within the deadline; every failure is a BlackboardStoreError. */
  async #call<T>(what: string, sessionId: string | undefined, work: () => Promise<T>): Promise<T> {
    const where = `postgres blackboard ${what} on ${redactUrl(this.url)}`;
    if (this.pool.ended || this.pool.ending) {
      throw new BlackboardStoreError("unavailable", "postgres", `${where}: the store is closed`, { sessionId });
    }
    return withDeadline(
      this.timeoutMs,
      async () => {
        try {
          return await work();
        } catch (error) {
          // SQLSTATE class 22, data exception: the server refuses this value (jsonb cannot hold
          // \u0000 in a string, for one), so retrying will not help.
          const refused = error instanceof DatabaseError && error.code?.startsWith("22");
          throw new BlackboardStoreError(
            refused ? "invalid_request" : "unavailable",
            "postgres",
            `${where} failed: ${scrubbed(error, this.url)}`,
            { cause: error, sessionId },
          );
        }
      },
      () => noAnswer("postgres", where, this.timeoutMs),
    );
  }
}
