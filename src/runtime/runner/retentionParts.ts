/**
 * The parts of retention a runner runs (src/eventlog/retention.ts): the
 * maximum ages set on the streams and buckets (applyRetention), the
 * memory graph's share of the per-session trim, and the sweeps of the stores
 * whose maximum age nats-server cannot enforce (the session state beside the
 * turn counters, PostgreSQL blackboards). See docs/operations.md, "Data lifecycle".
 */
import type { JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import { NatsBlackboardStore } from "../../blackboard/natsStore.ts";
import type { BlackboardOptions } from "../../blackboard/open.ts";
import { isStreamNotFound } from "../../bus/errors.ts";
import type { Service } from "../../bus/service.ts";
import { BLACKBOARD_BUCKET, buckets, streams } from "../../bus/subjects.ts";
import { messageOf } from "../../errors.ts";
import { ensureEventStreams, eventStreamNames } from "../../eventlog/eventStreams.ts";
import type { RetentionOptions } from "../../eventlog/retention.ts";
import { SWEEP_BATCH, sweepEveryMs, sweepSessionState } from "../../eventlog/sessionStateSweep.ts";
import { ensureMemoryStream } from "../../eventlog/streams.ts";
import { NatsMemoryGraphStore } from "../../memory/graph/natsGraphStore.ts";
import { MEMORY_GRAPH_ENV } from "../../memory/graph/open.ts";
import type { MemoryGraphStore } from "../../memory/graph/store.ts";
import { trimGraphTurn, trimNatsGraphTurn } from "../../memory/graph/trimTurn.ts";
import type { Logger } from "../../telemetry/log.ts";

/**
 * What the trim removes from the memory graph: from NATS KV always (the default
 * backend), and from PostgreSQL too when this runner's environment names that
 * backend (its store is opened on the first trim and kept).
 */
export function graphTrimmer(
  nc: NatsConnection,
  jsm: JetStreamManager,
  log: Logger,
  env: NodeJS.ProcessEnv = process.env,
): (sessionId: string, turnId: number) => Promise<string[]> {
  let postgres: Promise<MemoryGraphStore> | undefined;
  return async (sessionId, turnId) => {
    const texts = await trimNatsGraphTurn(nc, jsm, log, sessionId, turnId);
    if (env[MEMORY_GRAPH_ENV.backend] !== "postgres") return texts;
    postgres ??= import("../../memory/graph/open.ts").then(({ openMemoryGraph }) =>
      openMemoryGraph({ backend: "postgres", env }),
    );
    postgres.catch(() => {
      postgres = undefined; // opened again on the next trim
    });
    return [...texts, ...(await trimGraphTurn(await postgres, sessionId, turnId))];
  };
}

/** One sweep: what it is of, how often, and the work (how many entries it removed). */
interface Sweep {
  what: string;
  everyMs: number;
  run: () => Promise<number>;
}

/** The sweeps the settings ask this runner for (none when no age is set, or an age is 0, for ever). */
export function retentionSweeps(
  jsm: JetStreamManager,
  settings: RetentionOptions,
  log: Logger,
  blackboard: Pick<BlackboardOptions, "redisUrl" | "postgresUrl" | "timeoutMs"> = {},
  env: NodeJS.ProcessEnv = process.env,
): Sweep[] {
  const sweeps: Sweep[] = [];
  const sessionAge = settings.sessionStateMaxAgeMs;
  if (sessionAge)
    sweeps.push({
      what: "session state",
      everyMs: sweepEveryMs(sessionAge),
      run: () => sweepSessionState(jsm, sessionAge),
    });
  const boardAge = settings.blackboardsMaxAgeMs;
  if (boardAge)
    sweeps.push({
      what: "PostgreSQL blackboards",
      everyMs: sweepEveryMs(boardAge),
      run: () => sweepPostgresBlackboards(blackboard, env, boardAge),
    });
  if (sweeps.length > 0) log.debug(`retention sweeps: ${sweeps.map((sweep) => sweep.what).join(", ")}`);
  return sweeps;
}

/** The PostgreSQL blackboards not saved for `maxAgeMs`, when this runner has that store configured. */
async function sweepPostgresBlackboards(
  given: Pick<BlackboardOptions, "redisUrl" | "postgresUrl" | "timeoutMs">,
  env: NodeJS.ProcessEnv,
  maxAgeMs: number,
): Promise<number> {
  const { blackboardOptionsFromEnv, openBlackboardStore } = await import("../../blackboard/open.ts");
  const options = { ...blackboardOptionsFromEnv(env), ...given };
  if (!options.postgresUrl) return 0;
  const store = await openBlackboardStore("postgres", options);
  try {
    const sweep = (store as { sweep?: (before: Date, limit: number) => Promise<number> }).sweep;
    return sweep ? await sweep.call(store, new Date(Date.now() - maxAgeMs), SWEEP_BATCH) : 0;
  } finally {
    await store.close();
  }
}

/**
 * The service, with the sweeps running beside it until it stops: each on its
 * own timer, one run at a time; a failed run is logged and the next tries again.
 */
export function withSweeps(service: Service, sweeps: readonly Sweep[], log?: Logger): Service {
  if (sweeps.length === 0) return service;
  const running = new Set<Promise<void>>();
  const timers = sweeps.map((sweep) => {
    let busy = false;
    const timer = setInterval(() => {
      if (busy) return;
      busy = true;
      const run = sweep
        .run()
        .then(
          (removed) => {
            if (removed > 0) log?.debug(`retention: ${removed} ${sweep.what} entries past their age removed`);
          },
          (error: unknown) => log?.warn(`retention: ${sweep.what} not swept: ${messageOf(error)}`),
        )
        .finally(() => {
          busy = false;
          running.delete(run);
        });
      running.add(run);
    }, sweep.everyMs);
    timer.unref();
    return timer;
  });
  return {
    name: service.name,
    id: service.id,
    addEndpoint: (name, endpoint) => service.addEndpoint(name, endpoint),
    stop: async () => {
      for (const timer of timers) clearInterval(timer);
      await Promise.all(running);
      await service.stop();
    },
  };
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
  const eventsMaxAge = settings.eventsMaxAgeMs;
  if (eventsMaxAge !== undefined)
    jobs.push(
      ensureEventStreams(jsm).then(async (count) => {
        await Promise.all(eventStreamNames(count).map((name) => setMaxAge(jsm, name, eventsMaxAge)));
      }),
    );
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
