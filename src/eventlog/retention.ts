/**
 * Retention: how long the event log, the turn statuses and the episodes are
 * kept, enforced by the streams' and buckets' own `max_age` (nats-server
 * drops what is older; nothing in Conclave sweeps). See docs/operations.md,
 * "Data lifecycle".
 */
import type { JetStreamManager } from "@nats-io/jetstream";
import { buckets, streams } from "../bus/subjects.ts";
import { setting } from "../config/load.ts";
import { parseDuration } from "../config/variable.ts";
import { ConclaveError } from "../errors.ts";
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
   * The most turns a session keeps: when a turn ends, the one this many turns older loses its
   * events, status and episode (src/eventlog/sessionTrim.ts; a suspended run is kept until it
   * ends). Env `CONCLAVE_RETAIN_TURNS_PER_SESSION`. Unset: no limit.
   */
  turnsPerSession?: number;
}

/** The environment variables retention is read from: a duration such as `30d`, `12h`, `90m`, `3600s`, or `0` (for ever). */
export const RETENTION_ENV = {
  eventsMaxAgeMs: "CONCLAVE_RETAIN_EVENTS",
  turnStatusesMaxAgeMs: "CONCLAVE_RETAIN_TURN_STATUSES",
  episodesMaxAgeMs: "CONCLAVE_RETAIN_EPISODES",
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
 * ConclaveError naming it; so is a maximum age under MIN_RETENTION_MS (0, for
 * ever, is fine).
 */
export function retentionSettings(given: RetentionOptions = {}, env = process.env): RetentionOptions {
  const settings: RetentionOptions = {};
  for (const [field, variable] of Object.entries(RETENTION_ENV) as [
    keyof typeof RETENTION_ENV,
    (typeof RETENTION_ENV)[keyof typeof RETENTION_ENV],
  ][]) {
    const value = given[field] ?? setting(env, variable);
    const where = given[field] !== undefined ? `retention.${field}` : `${variable}=${JSON.stringify(env[variable])}`;
    if (value === undefined) continue;
    if (!Number.isInteger(value) || value < 0 || (value > 0 && value < MIN_RETENTION_MS)) {
      throw new ConclaveError("config", `${where}: a maximum age is 0 (for ever) or at least 1 hour`);
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
 * Brings the streams and buckets to the configured maximum ages (creating
 * the event log and the episodes' stream when missing; the turn statuses'
 * bucket is left alone until it exists). A store whose setting is unset is
 * not touched: limits an operator set by hand stay.
 */
export async function applyRetention(jsm: JetStreamManager, settings: RetentionOptions): Promise<void> {
  const jobs: Promise<void>[] = [];
  if (settings.eventsMaxAgeMs !== undefined)
    jobs.push(ensureEventStream(jsm).then(() => setMaxAge(jsm, streams.events, settings.eventsMaxAgeMs!)));
  if (settings.episodesMaxAgeMs !== undefined)
    jobs.push(ensureMemoryStream(jsm).then(() => setMaxAge(jsm, streams.memory, settings.episodesMaxAgeMs!)));
  if (settings.turnStatusesMaxAgeMs !== undefined)
    jobs.push(setMaxAge(jsm, `KV_${buckets.turns}`, settings.turnStatusesMaxAgeMs));
  await Promise.all(jobs);
}

async function setMaxAge(jsm: JetStreamManager, stream: string, maxAgeMs: number): Promise<void> {
  const wanted = maxAgeMs * 1_000_000;
  try {
    const info = await jsm.streams.info(stream);
    if (info.config.max_age !== wanted) await jsm.streams.update(stream, { max_age: wanted });
  } catch (error) {
    if (!isStreamNotFound(error)) throw error;
  }
}
