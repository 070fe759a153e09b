/**
 * Retention: how long each store of user content is kept, enforced by the
 * streams' and buckets' own `max_age` (nats-server drops what is older), and
 * where a bucket also holds bookkeeping that must outlive its content (the
 * sessions' bucket) or the store is not NATS (PostgreSQL), by a bounded sweep
 * run by the process that owns the store. See docs/operations.md, "Data lifecycle".
 */
import { setting } from "../config/load.ts";
import { parseDuration } from "../config/variable.ts";
import { ConclaveError } from "../errors.ts";

/** How long each kind of stored data is kept, in ms; 0 keeps it for ever. Unset: the store is left as it is. */
export interface RetentionOptions {
  /** Events of the log (CONCLAVE_EVENTS_<i>: turns and ledger entries). Env `CONCLAVE_RETAIN_EVENTS`. */
  eventsMaxAgeMs?: number;
  /** Turn statuses (KV conclave_turns), from their last change. Env `CONCLAVE_RETAIN_TURN_STATUSES`. */
  turnStatusesMaxAgeMs?: number;
  /** Episodes (CONCLAVE_MEMORY). Env `CONCLAVE_RETAIN_EPISODES`. */
  episodesMaxAgeMs?: number;
  /**
   * Memory graph nodes and edges (KV conclave_memory_graph; in PostgreSQL, the sweep of the process
   * that owns the store), from their last change. Env `CONCLAVE_RETAIN_MEMORY_GRAPH`.
   */
  memoryGraphMaxAgeMs?: number;
  /**
   * Session state: snapshots, replay checkpoints, idempotency keys, uncommitted memory, fork index
   * (KV conclave_sessions, swept by the runners: the bucket also holds the turn counters, which are
   * kept). Env `CONCLAVE_RETAIN_SESSION_STATE`.
   */
  sessionStateMaxAgeMs?: number;
  /** Blackboards (KV conclave_blackboards; PostgreSQL's swept by the runner), from their last change. Env `CONCLAVE_RETAIN_BLACKBOARDS`. */
  blackboardsMaxAgeMs?: number;
  /**
   * The most turns a session keeps: when a turn ends, the one this many turns older loses its
   * events, status and episode (src/eventlog/sessionTrim.ts; a suspended run is kept until it
   * ends). Env `CONCLAVE_RETAIN_TURNS_PER_SESSION`. Unset: no limit.
   */
  turnsPerSession?: number;
  /**
   * The shortest maximum age accepted, in ms (default MIN_RETENTION_MS, 1 hour). Only given in code,
   * never read from the environment: for tests and embedders whose turns are known to end in less.
   */
  minimumAgeMs?: number;
}

/** The environment variables retention is read from: a duration such as `30d`, `12h`, `90m`, `3600s`, or `0` (for ever). */
export const RETENTION_ENV = {
  eventsMaxAgeMs: "CONCLAVE_RETAIN_EVENTS",
  turnStatusesMaxAgeMs: "CONCLAVE_RETAIN_TURN_STATUSES",
  episodesMaxAgeMs: "CONCLAVE_RETAIN_EPISODES",
  memoryGraphMaxAgeMs: "CONCLAVE_RETAIN_MEMORY_GRAPH",
  sessionStateMaxAgeMs: "CONCLAVE_RETAIN_SESSION_STATE",
  blackboardsMaxAgeMs: "CONCLAVE_RETAIN_BLACKBOARDS",
} as const;

/** The environment variable of `turnsPerSession`: a whole number from 1. */
export const TURNS_PER_SESSION_ENV = "CONCLAVE_RETAIN_TURNS_PER_SESSION";

/**
 * The shortest maximum age accepted (1 hour), so that no limit can drop the
 * events or status of a turn still running: a turn waits at most its TTL
 * (10 min by default) and runs within its deadlines, well under this.
 */
export const MIN_RETENTION_MS = 3_600_000;

/** `30d`, `12h`, `90m`, `3600s` (or `0`) in ms; null when it is none of those. */
export const parseRetention = (text: string): number | null => parseDuration(text);

/**
 * The retention in force: each field from `given`, else its environment
 * variable (src/config/schema.ts), else unset. A bad value is a "config"
 * ConclaveError naming it; so is a maximum age under `minimumAgeMs` (default
 * MIN_RETENTION_MS; 0, for ever, is fine).
 */
export function retentionSettings(given: RetentionOptions = {}, env = process.env): RetentionOptions {
  const settings: RetentionOptions = {};
  const minimum = given.minimumAgeMs ?? MIN_RETENTION_MS;
  if (!Number.isInteger(minimum) || minimum < 1_000)
    throw new ConclaveError("config", "retention.minimumAgeMs: a whole number of ms from 1000");
  if (given.minimumAgeMs !== undefined) settings.minimumAgeMs = minimum;
  for (const [field, variable] of Object.entries(RETENTION_ENV) as [
    keyof typeof RETENTION_ENV,
    (typeof RETENTION_ENV)[keyof typeof RETENTION_ENV],
  ][]) {
    const value = given[field] ?? setting(env, variable);
    const where = given[field] !== undefined ? `retention.${field}` : `${variable}=${JSON.stringify(env[variable])}`;
    if (value === undefined) continue;
    if (!Number.isInteger(value) || value < 0 || (value > 0 && value < minimum)) {
      const least = minimum === MIN_RETENTION_MS ? "1 hour" : `${minimum} ms`;
      throw new ConclaveError("config", `${where}: a maximum age is 0 (for ever) or at least ${least}`);
    }
    settings[field] = value;
  }
  const turns = given.turnsPerSession ?? setting(env, TURNS_PER_SESSION_ENV);
  if (turns !== undefined) {
    if (!Number.isInteger(turns) || turns < 1)
      throw new ConclaveError(
        "config",
        "retention.turnsPerSession: the turns a session keeps is a whole number from 1",
      );
    settings.turnsPerSession = turns;
  }
  return settings;
}
