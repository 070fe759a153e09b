/**
 * Removing one session from every store it lives in (the work of an erase,
 * src/runtime/intake/erase.ts). Every message of the session, in streams and
 * KV buckets alike, is deleted with JetStream's secure delete (src/eventlog/eraseSecure.ts),
 * which overwrites its bytes on disk; a KV key's delete marker goes the same
 * way (a marker keeps the key's name, and a key can hold content: a memory
 * node's id). Each store is erased on its own: one that fails is reported
 * and the others go on.
 */
import { type JetStreamManager, jetstream } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/nats-core";
import type { BlackboardOptions } from "../../blackboard/open.ts";
import { isLetterOfSession } from "../../bus/deadLetters.ts";
import { isStreamNotFound } from "../../bus/errors.ts";
import { BLACKBOARD_BUCKET, buckets, eventStreamOfSubject, streams, subjects } from "../../bus/subjects.ts";
import type { ErasedCounts } from "../../contracts/erase.ts";
import { messageOf, singleLine } from "../../errors.ts";
import { type EraseProgress, secureErase } from "../../eventlog/eraseSecure.ts";
import { eventStreamCount } from "../../eventlog/eventStreams.ts";
import { MEMORY_GRAPH_ENV } from "../../memory/graph/open.ts";
import { eraseSessionSchedules } from "../../schedules/erase.ts";
import type { Logger } from "../../telemetry/log.ts";
import { forkKey } from "./eraseForks.ts";

/** What erasing a session's stores needs. */
export interface EraseStoreDeps {
  nc: NatsConnection;
  jsm: JetStreamManager;
  log: Logger;
  /** The runner's Redis and PostgreSQL blackboard URLs (default: the environment's). */
  blackboard?: Pick<BlackboardOptions, "redisUrl" | "postgresUrl" | "timeoutMs">;
  /** Where the memory graph's backend is read from (`CONCLAVE_MEMORY_BACKEND`, `CONCLAVE_POSTGRES_URL`). Default `process.env`. */
  env?: NodeJS.ProcessEnv;
}

/** What was removed (per store), and which stores were skipped (not configured here) or failed. */
export interface StoresErased {
  erased: ErasedCounts;
  skipped: string[];
  failed: string[];
}

/** One store's erase: the entries removed, or "skipped" when this runner has no such store configured. */
type StoreEraser = () => Promise<number | "skipped">;

/**
 * Erases the session from every store, each independently. The turn
 * counter (`counter.<session>`: two integers and a flag) is kept so that turn ids are
 * never given twice (events are deduplicated by `<session>.<turn>.<seq>`);
 * the ownership record (a runner's name) is left to its runner, which lets
 * the session go when told of the erase (`conclave.session.erased`):
 * deleting a live lease would let two runners run the session at once.
 */
export async function eraseStores(
  deps: EraseStoreDeps,
  sessionId: string,
  options: { withForks?: boolean } = {},
): Promise<StoresErased> {
  const env = deps.env ?? process.env;
  const eventLog = subjects.sessionLog(sessionId, await eventStreamCount(deps.jsm));
  const progress = (store: string): EraseProgress => ({
    log: deps.log,
    label: `erase of session ${sessionId}: ${store}`,
  });
  const stream =
    (name: string, filter: string): StoreEraser =>
    () =>
      secureErase(deps.jsm, name, filter, progress(name));
  const kv =
    (bucket: string, filters: string[], markers = false): StoreEraser =>
    () =>
      eraseKeys(deps, bucket, filters, markers, progress(bucket));
  const erasers: Record<string, StoreEraser> = {
    // Turns and ledger entries: conclave.events.<stream>.<s>.<turn> and ….<s>.ledger.entries.
    events: stream(eventStreamOfSubject(eventLog), eventLog),
    wal: stream(streams.turns, subjects.sessionWal(sessionId)),
    episodes: stream(streams.memory, `${subjects.memoryEpisode(sessionId, 0).replace(/\.0$/, "")}.*`),
    // Letters refused on a subject naming the session, or whose kept payload names it.
    dead_letters: () =>
      secureErase(deps.jsm, streams.deadLetters, subjects.deadLetter(">"), progress("dead letters"), {
        matches: (msg) => isLetterOfSession(msg.data, sessionId),
      }),
    // Stopped first (every runner's firing loop drops them), then their log entries overwritten.
    schedules: async () =>
      (await eraseSessionSchedules(jetstream(deps.nc), deps.jsm, sessionId, progress("schedules"))).entries,
    // Turn statuses, and with them the approvals a suspended run waits for.
    turn_statuses: kv(buckets.turns, [`${sessionId}.*`]),
    session_state: kv(buckets.sessions, [`snapshot.${sessionId}`, `checkpoint.${sessionId}`, `pipeline.${sessionId}`]),
    idempotency_keys: kv(buckets.sessions, [`idem.${sessionId}.*`]),
    memory_backlog: kv(buckets.sessions, [`uncommitted.${sessionId}`]),
    // Its entry as a fork of another session; its own forks' entries only when they are erased too.
    fork_index: kv(buckets.sessions, [
      forkKey("*", sessionId),
      ...(options.withForks ? [forkKey(sessionId, "*")] : []),
    ]),
    ledger_projection: kv(buckets.ledgers, [sessionId]),
    // Delete markers first: every runner's suspension timers watch this bucket and disarm.
    suspended_runs: kv(buckets.suspended, [`${sessionId}.*`], true),
    scheduler_cooldowns: kv(buckets.scheduler, [sessionId]),
    // Delete markers first: workers following the session's graph drop their in-memory copy.
    memory_graph: kv(buckets.memoryGraph, [`${sessionId}.>`], true),
    // Large tool results stored by reference (their turns' logs hold only a preview).
    tool_outputs: kv(buckets.toolOutputs, [`${sessionId}.>`]),
    // Workers' step answers kept for a takeover (model output), keyed by their session.
    step_replies: kv(buckets.stepReplies, [`${sessionId}.>`]),
    blackboard: kv(BLACKBOARD_BUCKET, [sessionId]),
    redis_blackboard: () => eraseBlackboard(deps, "redis", sessionId),
    postgres_blackboard: () => eraseBlackboard(deps, "postgres", sessionId),
    postgres_memory_graph: () => erasePostgresGraph(env, sessionId),
  };
  const result: StoresErased = { erased: {}, skipped: [], failed: [] };
  await Promise.all(
    Object.entries(erasers).map(async ([name, erase]) => {
      try {
        const count = await erase();
        if (count === "skipped") result.skipped.push(name);
        else result.erased[name] = count;
      } catch (error) {
        deps.log.error(`erase of session ${sessionId}: ${name} failed: ${singleLine(messageOf(error))}`);
        result.failed.push(name);
      }
    }),
  );
  result.skipped.sort();
  result.failed.sort();
  return result;
}

/**
 * Removes the bucket's keys matching the filters, overwriting every stored
 * revision the stream still indexes (markers included): how many keys there
 * were. With `markers`, each key is deleted first (a watcher sees the delete).
 */
async function eraseKeys(
  deps: EraseStoreDeps,
  bucket: string,
  filters: string[],
  markers: boolean,
  progress: EraseProgress,
): Promise<number> {
  const stream = `KV_${bucket}`;
  const prefix = `$KV.${bucket}.`;
  let count = 0;
  for (const filter of filters) {
    let keys: string[];
    try {
      const info = await deps.jsm.streams.info(stream, { subjects_filter: `${prefix}${filter}` });
      keys = Object.keys(info.state.subjects ?? {}).map((subject) => subject.slice(prefix.length));
    } catch (error) {
      if (isStreamNotFound(error)) return 0;
      throw error;
    }
    if (keys.length === 0) continue;
    if (markers) {
      const kv = await new Kvm(deps.nc).open(bucket);
      for (const key of keys) await kv.delete(key);
    }
    await secureErase(deps.jsm, stream, `${prefix}${filter}`, progress);
    count += keys.length;
  }
  return count;
}

/** The session's blackboard in Redis or PostgreSQL, when this runner has that backend configured. */
async function eraseBlackboard(
  deps: EraseStoreDeps,
  backend: "redis" | "postgres",
  sessionId: string,
): Promise<number | "skipped"> {
  const env = deps.env ?? process.env;
  const { blackboardOptionsFromEnv, openBlackboardStore } = await import("../../blackboard/open.ts");
  const options = { ...blackboardOptionsFromEnv(env), ...deps.blackboard };
  if (!(backend === "redis" ? options.redisUrl : options.postgresUrl)) return "skipped";
  const store = await openBlackboardStore(backend, options);
  try {
    return (await store.erase?.(sessionId)) ? 1 : 0;
  } finally {
    await store.close();
  }
}

/**
 * The session's memory graph in PostgreSQL, when this runner's environment
 * names that backend: its nodes and edges deleted. Memory workers on that
 * backend delete them too when told of the erase (memoryEndpoints.ts), so
 * a runner without the setting leaves no rows behind them.
 */
async function erasePostgresGraph(env: NodeJS.ProcessEnv, sessionId: string): Promise<number | "skipped"> {
  if (env[MEMORY_GRAPH_ENV.backend] !== "postgres") return "skipped";
  const { openMemoryGraph } = await import("../../memory/graph/open.ts");
  const store = await openMemoryGraph({ backend: "postgres", env });
  try {
    return await store.eraseSession(sessionId);
  } finally {
    await store.close();
  }
}
