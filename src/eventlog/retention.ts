/**
 * Retention: how long each store of user content is kept, enforced by the
 * streams' and buckets' own `max_age` (nats-server drops what is older), and
 * where a bucket also holds bookkeeping that must outlive its content (the
 * sessions' bucket) or the store is not NATS (PostgreSQL), by a bounded sweep
 * run by the process that owns the store. See docs/operations.md, "Data lifecycle".
 */
import type { JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import { BLACKBOARD_BUCKET, NatsBlackboardStore } from "../blackboard/natsStore.ts";
import { buckets, streams } from "../bus/subjects.ts";
import { setting } from "../config/load.ts";
import { parseDuration } from "../config/variable.ts";
import { ConclaveError } from "../errors.ts";
import { NatsMemoryGraphStore } from "../memory/graph/natsGraphStore.ts";
import { ensureEventStream, ensureMemoryStream, isStreamNotFound } from "./streams.ts";

/** How long each kind of stored data is kept, in ms; 0 keeps it for ever. Unset: the store is left as it is. */
export interface RetentionOptions {
  /** Events of the log (CONCLAVE_EVENTS: turns and ledger entries). Env `CONCLAVE_RETAIN_EVENTS`. */
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

/**
 * Brings the streams and buckets to the configured maximum ages, creating
 * the event log, the episodes' stream and, given `nc`, the memory graph's and
 * the blackboards' buckets when missing (by their stores' own `open`, so they
 * get their usual settings); the turn statuses' and ledgers' buckets are left
 * alone until they exist. The ledgers' projection gets the event log's age: a
 * summary expires with the events it folds (it is rewritten with each, so it
 * outlives the last of them by moments). A store whose setting is unset is not
 * touched: limits an operator set by hand stay. The sessions' bucket is swept
 * instead (src/eventlog/sessionStateSweep.ts).
 */
export async function applyRetention(
  jsm: JetStreamManager,
  settings: RetentionOptions,
  nc?: NatsConnection,
): Promise<void> {
  const jobs: Promise<void>[] = [];
  const set = (ageMs: number | undefined, stream: string, ensure: () => Promise<unknown> = async () => {}) => {
    if (ageMs !== undefined) jobs.push(ensure().then(() => setMaxAge(jsm, stream, ageMs)));
  };
  set(settings.eventsMaxAgeMs, streams.events, () => ensureEventStream(jsm));
  set(settings.eventsMaxAgeMs, `KV_${buckets.ledgers}`);
  set(settings.episodesMaxAgeMs, streams.memory, () => ensureMemoryStream(jsm));
  set(settings.turnStatusesMaxAgeMs, `KV_${buckets.turns}`);
  set(settings.memoryGraphMaxAgeMs, `KV_${buckets.memoryGraph}`, async () => {
    if (nc) await (await NatsMemoryGraphStore.open(nc)).close();
  });
  set(settings.blackboardsMaxAgeMs, `KV_${BLACKBOARD_BUCKET}`, async () => {
    if (nc) await (await NatsBlackboardStore.open(nc)).close();
  });
  await Promise.all(jobs);
}
async function setMaxAge(jsm: JetStreamManager, stream: string, maxAgeMs: number): Promise<void> {
  const wanted = maxAgeMs * 1_000_000;
  try {
    const info = await jsm.streams.info(stream);
    if (info.config.max_age === wanted) return;
    // nats-server refuses a duplicates window longer than the age (only a test's seconds-long age is shorter).
    const window = info.config.duplicate_window;
    const shorter = wanted > 0 && window > wanted ? { duplicate_window: wanted } : {};
    await jsm.streams.update(stream, { max_age: wanted, ...shorter });
  } catch (error) {
    if (!isStreamNotFound(error)) throw error;
  }
}
