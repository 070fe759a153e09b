/**
 * Opening the memory graph store a process is configured for: NATS KV by
 * default, PostgreSQL when asked (by option or by the environment).
 */
import { jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import { setting } from "../../config/load.ts";
import { ConclaveError } from "../../errors.ts";
import { retentionSettings } from "../../eventlog/retention.ts";
import { sweepEveryMs } from "../../eventlog/sessionStateSweep.ts";
import { importOptional } from "../../optionalPackages.ts";
import { bucketMaxAge, withMaxAge } from "./maxAge.ts";
import { NatsMemoryGraphStore } from "./natsGraphStore.ts";
import type { MemoryGraphBackend, MemoryGraphStore } from "./store.ts";

/** The environment variables the memory graph's configuration is read from. */
export const MEMORY_GRAPH_ENV = {
  backend: "CONCLAVE_MEMORY_BACKEND",
  postgresUrl: "CONCLAVE_POSTGRES_URL",
  maxSessions: "CONCLAVE_MEMORY_GRAPH_SESSIONS",
} as const;

/** What a process has for keeping its memory graph. */
export interface MemoryGraphOptions {
  /** The process's NATS connection, for the `nats` backend (the default). */
  nc?: NatsConnection;
  /** `postgres://…` URL of the `postgres` backend. Default: `CONCLAVE_POSTGRES_URL`. */
  postgresUrl?: string;
  /** The backend. Default: `CONCLAVE_MEMORY_BACKEND`, else `nats`. */
  backend?: MemoryGraphBackend;
  /** Longest one store call may take. Default DEFAULT_MEMORY_GRAPH_TIMEOUT_MS (3 s). */
  timeoutMs?: number;
  /** Most sessions kept in memory at once. Default: `CONCLAVE_MEMORY_GRAPH_SESSIONS` (DEFAULT_MEMORY_GRAPH_SESSIONS). */
  maxSessions?: number;
  /**
   * The PostgreSQL graph's maximum age in ms (0: none), from its nodes' last change: reads leave
   * older nodes out and the store is swept. Default: `CONCLAVE_RETAIN_MEMORY_GRAPH`. (The NATS
   * graph's age is its bucket's `max_age`, which the runners set.)
   */
  maxAgeMs?: number;
  /** Told when a sweep of the PostgreSQL graph fails (the next one tries again). */
  onSweepError?: (message: string) => void;
  /** Where the defaults are read from. Default `process.env`. */
  env?: NodeJS.ProcessEnv;
}

const BACKENDS: readonly MemoryGraphBackend[] = ["nats", "postgres"];

/**
 * Opens the memory graph store: the given backend, else the one
 * `CONCLAVE_MEMORY_BACKEND` names, else NATS. A backend without what it needs
 * (postgres without a URL, nats without a connection) or an unknown backend
 * name is a "config" ConclaveError saying how to configure it; an unreachable
 * one is a MemoryGraphStoreError. The PostgreSQL store loads its client (the
 * optional package pg) here: without it, a "missing_dependency" ConclaveError.
 */
export async function openMemoryGraph(options: MemoryGraphOptions = {}): Promise<MemoryGraphStore> {
  const env = options.env ?? process.env;
  const named = options.backend ?? setting(env, MEMORY_GRAPH_ENV.backend);
  if (!BACKENDS.includes(named as MemoryGraphBackend)) {
    throw new ConclaveError(
      "config",
      `unknown memory graph backend ${JSON.stringify(named)} (${MEMORY_GRAPH_ENV.backend}): expected nats or postgres`,
    );
  }
  const backend = named as MemoryGraphBackend;
  const timing = {
    ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
    maxSessions: options.maxSessions ?? setting(env, MEMORY_GRAPH_ENV.maxSessions),
  };
  if (backend === "postgres") {
    const url = options.postgresUrl ?? setting(env, MEMORY_GRAPH_ENV.postgresUrl);
    if (!url) {
      throw new ConclaveError(
        "config",
        `the memory graph's backend is postgres but no PostgreSQL URL is configured: set ${MEMORY_GRAPH_ENV.postgresUrl} or the option postgresUrl`,
      );
    }
    const { PostgresMemoryGraphStore } = await importOptional(
      "the PostgreSQL memory graph",
      ["pg"],
      () => import("./postgresGraphStore.ts"),
    );
    const maxAgeMs = options.maxAgeMs ?? retentionSettings({}, env).memoryGraphMaxAgeMs ?? 0;
    const store = await PostgresMemoryGraphStore.open(url, timing);
    if (maxAgeMs <= 0) return store;
    return withMaxAge(store, {
      maxAgeMs: async () => maxAgeMs,
      sweepEveryMs: sweepEveryMs(maxAgeMs),
      ...(options.onSweepError ? { onSweepError: options.onSweepError } : {}),
    });
  }
  if (!options.nc) {
    throw new ConclaveError(
      "config",
      `the memory graph's backend is nats but no NATS connection was given: pass the option nc, or set ${MEMORY_GRAPH_ENV.backend}=postgres`,
    );
  }
  const store = await NatsMemoryGraphStore.open(options.nc, timing);
  // nats-server expires entries past the bucket's max_age without a delete marker: reads leave them out.
  return withMaxAge(store, { maxAgeMs: bucketMaxAge(await jetstreamManager(options.nc)) });
}
