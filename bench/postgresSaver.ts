import { PostgresSaver } from "@langchain/langgraph-checkpoint-postgres";
import pg from "pg";
import type { Modulators, Stance } from "../src/contracts/workspace.ts";
import type { TurnServices } from "../src/runtime/turnServices/turnServices.ts";
import { type PostgresServer, startPostgresServer } from "../test/helpers/postgresServer.ts";
import { postgresVersion } from "./environment.ts";
import type { InProcessPipeline } from "./inprocess.ts";
import { langGraphPipeline } from "./langgraph.ts";
import { processTreeCpuMs } from "./procfs.ts";
import { progress } from "./progress.ts";

/** The pipeline's name in the report and the targets. */
export const POSTGRES_SAVER_PIPELINE = "LangGraph.js + PostgresSaver";

/**
 * The server settings: the test suite's (fsync off). JetStream does not fsync
 * each write either (it syncs every two minutes by default), so neither side
 * pays for a disk flush per checkpoint or event; if anything this is generous
 * to PostgresSaver.
 */
const SETTINGS = { fsync: "off" };

/** node-postgres's default pool size, which `PostgresSaver.fromConnString` gets. */
const PG_POOL_DEFAULT_MAX = 10;

/** What the report says about the PostgreSQL behind PostgresSaver, or why there was none. */
export interface PostgresSaverSetup {
  available: boolean;
  /** Why PostgresSaver was not measured (PostgreSQL not found, or it did not start). */
  reason?: string;
  /** PostgreSQL's version (`postgres --version`). */
  version?: string;
  settings?: Record<string, string>;
  /** Connections of the saver's pool. */
  poolMax?: number;
}

/** A PostgreSQL the bench started for LangGraph.js + PostgresSaver. */
export interface BenchPostgres {
  setup: PostgresSaverSetup;
  /** Its connection URL (e.g. to read the savers' table sizes: bench/durability.ts). */
  url: string;
  /** A new pipeline with its own saver (and pool) on this server; `close()` ends the pool. */
  pipeline(services: TurnServices, start: { modulators: Modulators; stance: Stance }): Promise<InProcessPipeline>;
  stop(): Promise<void>;
}

/**
 * Starts a private PostgreSQL the way the test suite does (free loopback port,
 * temporary data directory), or says why it could not: the bench then reports
 * PostgresSaver as not measured instead of failing.
 */
export async function startBenchPostgres(): Promise<BenchPostgres | { setup: PostgresSaverSetup }> {
  let server: PostgresServer;
  try {
    server = await startPostgresServer({ prefix: "conclave-bench-postgres-", settings: SETTINGS });
  } catch (error) {
    const reason = error instanceof Error ? (error.message.split("\n")[0] ?? error.message) : String(error);
    progress(`PostgreSQL: not started (${reason}); LangGraph.js + PostgresSaver is not measured`);
    return { setup: { available: false, reason } };
  }
  // Should the bench crash, the server must not outlive it.
  const killServer = () => {
    const pid = server.postmasterPid();
    if (pid) process.kill(pid, "SIGQUIT");
  };
  process.once("exit", killServer);
  const setup: PostgresSaverSetup = {
    available: true,
    version: postgresVersion(),
    settings: SETTINGS,
    poolMax: PG_POOL_DEFAULT_MAX,
  };
  progress(`PostgreSQL ${setup.version} on port ${server.port} (postmaster ${server.postmasterPid()})`);
  return {
    setup,
    url: server.url,
    pipeline: async (services, start) => {
      // What `PostgresSaver.fromConnString` builds (a default pool), plus an error listener: pool.end() does not
      // wait for its connections to close, and a server stopping right after must not crash the bench.
      const pool = new pg.Pool({ connectionString: server.url, max: PG_POOL_DEFAULT_MAX });
      let closed = false;
      pool.on("error", (error) => {
        if (!closed) progress(`PostgresSaver's pool: ${error.message}`);
      });
      const saver = new PostgresSaver(pool);
      await saver.setup();
      const pipeline = langGraphPipeline(services, { checkpointer: saver, name: POSTGRES_SAVER_PIPELINE }, start);
      return {
        ...pipeline,
        // The postmaster and its children: a backend per pooled connection, the checkpointer, the WAL writer…
        serverCpuMs: () => {
          const pid = server.postmasterPid();
          return pid ? processTreeCpuMs(pid) : Number.NaN;
        },
        close: async () => {
          closed = true;
          await saver.end();
        },
      };
    },
    stop: async () => {
      process.removeListener("exit", killServer);
      await server.destroy();
    },
  };
}

/** Narrows the result of {@link startBenchPostgres}. */
export const postgresStarted = (value: BenchPostgres | { setup: PostgresSaverSetup }): value is BenchPostgres =>
  "pipeline" in value;
