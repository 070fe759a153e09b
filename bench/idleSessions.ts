import type { NatsConnection } from "@nats-io/nats-core";
import { busOptions, connectBus } from "../src/bus/connection.ts";
import { type BenchCluster, startBenchCluster } from "./cluster.ts";
import { conclaveTurn } from "./conclave.ts";
import { closedLoop } from "./load.ts";
import type { BenchPlan } from "./plan.ts";
import { cpuTimeMs, processMemory } from "./procfs.ts";
import { progress } from "./progress.ts";
import { round } from "./stats.ts";

/**
 * The runner's idle-session eviction, as the runner reads it from its
 * environment (set short for the bench). Runners that do not evict ignore it.
 */
export const IDLE_TTL_VARIABLE = "CONCLAVE_IDLE_SESSION_TTL_MS";

/** JetStream traffic of the account, by kind, per second. */
export interface IdleTraffic {
  /** KV reads and writes: `$KV.<bucket>.…` publishes and direct/message gets on `KV_<bucket>` streams. */
  kvOpsPerSec: number;
  /** Every JetStream API request (`$JS.API.>`), KV gets included. */
  jsApiPerSec: number;
  /** The busiest kinds, e.g. `KV put conclave_runners`. */
  top: { subject: string; perSecond: number }[];
}

export interface IdleReading {
  sessions: number;
  /** Runner RSS right after the step's sessions were opened (no GC), MiB. */
  rssAfterOpenMiB: number;
  /** After waiting the eviction TTL and two forced full GCs. */
  rssMiB: number;
  heapUsedMiB: number;
  /** Runner CPU while every session was idle, in cores. */
  runnerCores: number;
  traffic: IdleTraffic;
  /** How long opening the step's sessions took. */
  openS: number;
}

export interface IdleSessionsRun {
  ttlMs: number;
  sampleMs: number;
  /** The runner before any session of this phase (after warm-up and a GC). */
  baseline: { rssMiB: number; heapUsedMiB: number; runnerCores: number; traffic: IdleTraffic };
  readings: IdleReading[];
}

/** What a JetStream subject is, as a kind of operation (the bucket or stream kept, the rest dropped). */
function kindOf(subject: string): { kind: string; kv: boolean } {
  const put = /^\$KV\.([^.]+)\./.exec(subject);
  if (put) return { kind: `KV put ${put[1]}`, kv: true };
  const get = /^\$JS\.API\.(?:DIRECT\.GET|STREAM\.MSG\.GET)\.KV_([^.]+)/.exec(subject);
  if (get) return { kind: `KV get ${get[1]}`, kv: true };
  return { kind: subject.split(".").slice(0, 4).join("."), kv: false };
}

/** Counts the account's KV and JetStream API traffic for `ms` (a subscription of the bench's unrestricted user). */
async function sampleTraffic(cluster: BenchCluster, ms: number): Promise<IdleTraffic> {
  const observer = await cluster.connectInstrument("bench-idle-traffic");
  const counts = new Map<string, number>();
  let kv = 0;
  let api = 0;
  const count = (subject: string) => {
    const { kind, kv: isKv } = kindOf(subject);
    counts.set(kind, (counts.get(kind) ?? 0) + 1);
    if (isKv) kv++;
    if (subject.startsWith("$JS.API.")) api++;
  };
  const subs = ["$KV.>", "$JS.API.>"].map((subject) =>
    observer.subscribe(subject, { callback: (_error, msg) => count(msg.subject) }),
  );
  await observer.flush();
  await new Promise((resolve) => setTimeout(resolve, ms));
  for (const sub of subs) sub.unsubscribe();
  await observer.close();
  const perSecond = (n: number) => round(n / (ms / 1000), 1);
  return {
    kvOpsPerSec: perSecond(kv),
    jsApiPerSec: perSecond(api),
    top: [...counts]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 5)
      .map(([subject, n]) => ({ subject, perSecond: perSecond(n) })),
  };
}

/** Runner heap and RSS after two full GCs, its CPU over `ms` while idle, and the traffic meanwhile. */
async function readIdle(cluster: BenchCluster, ms: number) {
  const pid = cluster.runner.child.pid ?? -1;
  const reply = await cluster.control(cluster.runner, { bench: "gc" });
  const rssMiB = round((processMemory(pid)?.rssKb ?? Number.NaN) / 1024, 1);
  const cpuBefore = cpuTimeMs(pid);
  const startedAt = performance.now();
  const traffic = await sampleTraffic(cluster, ms);
  const runnerCores = round((cpuTimeMs(pid) - cpuBefore) / (performance.now() - startedAt), 3);
  return { rssMiB, heapUsedMiB: round((reply.memory?.heapUsed ?? Number.NaN) / 2 ** 20, 1), runnerCores, traffic };
}

/** Opens `count` new sessions, one offline turn each, `concurrency` at a time, with progress. */
async function openSessions(nc: NatsConnection, plan: BenchPlan, prefix: string, count: number): Promise<number> {
  const concurrency = Math.min(plan.busyDay.idleConcurrency, count);
  const perSession = Math.ceil(count / concurrency);
  let opened = 0;
  const result = await closedLoop({
    sessions: concurrency,
    turnsPerSession: perSession,
    // Every turn opens a new session; the loop's last round may overshoot `count` by less than `concurrency`.
    runTurn: async (session, turn) => {
      const index = turn * concurrency + session;
      if (index >= count) return { latencyMs: 0, events: 0, ok: true };
      const sample = await conclaveTurn(nc, `${prefix}-${index}`, plan.texts[index % plan.texts.length]!);
      opened++;
      return sample;
    },
    onTick: (_done, elapsedMs) =>
      progress(
        `  idle sessions: ${opened} of ${count} opened (${round((opened / elapsedMs) * 1000, 0)}/s, ${round(elapsedMs / 1000, 0)} s)`,
      ),
  });
  if (result.failed > 0) progress(`  idle sessions: ${result.failed} opening turns failed`);
  return opened;
}

/**
 * Idle sessions: the offline deployment with a short idle-session TTL opens
 * sessions (one turn each) up to each step, then, once the TTL has passed,
 * reads the runner's memory (after GCs) against its baseline, its CPU while
 * all are idle, and the account's KV and JetStream API traffic meanwhile: at
 * a tenth of the sessions and at all of them, to show whether that traffic
 * depends on how many sessions exist.
 */
export async function runIdleSessions(plan: BenchPlan, tag: string): Promise<IdleSessionsRun> {
  const day = plan.busyDay;
  const cluster = await startBenchCluster({ env: { [IDLE_TTL_VARIABLE]: String(day.idleTtlMs) } });
  const nc = await connectBus(busOptions("client", { servers: cluster.url, name: "bench-idle-sessions" }));
  const waitForEviction = () => new Promise((resolve) => setTimeout(resolve, day.idleTtlMs + 2_000));
  try {
    progress(`busy day, idle sessions: offline model, ${IDLE_TTL_VARIABLE}=${day.idleTtlMs}; warming up`);
    const warm = await closedLoop({
      sessions: 10,
      turnsPerSession: 5,
      runTurn: (session, turn) =>
        conclaveTurn(nc, `${tag}-idle-warm-${session}`, plan.texts[turn % plan.texts.length]!),
    });
    if (warm.turns === 0) throw new Error(`no warm-up turn completed (${warm.failed} failed)`);
    await waitForEviction();
    const baseline = await readIdle(cluster, day.idleSampleMs);
    progress(
      `busy day, idle sessions: baseline runner RSS ${baseline.rssMiB} MiB, heap ${baseline.heapUsedMiB} MiB, ${baseline.runnerCores} cores, ${baseline.traffic.kvOpsPerSec} KV ops/s`,
    );
    const readings: IdleReading[] = [];
    let sessions = 0;
    for (const step of day.idleSteps) {
      const started = performance.now();
      progress(`busy day, idle sessions: opening ${step - sessions} sessions (to ${step})`);
      sessions += await openSessions(nc, plan, `${tag}-idle-${step}`, step - sessions);
      const openS = round((performance.now() - started) / 1000, 1);
      const rssAfterOpenMiB = round((processMemory(cluster.runner.child.pid ?? -1)?.rssKb ?? Number.NaN) / 1024, 1);
      await waitForEviction();
      const reading = { sessions, rssAfterOpenMiB, openS, ...(await readIdle(cluster, day.idleSampleMs)) };
      readings.push(reading);
      progress(
        `busy day, ${sessions} idle sessions (opened in ${openS} s): runner RSS ${rssAfterOpenMiB} MiB after opening, ${reading.rssMiB} MiB after the TTL (baseline ${baseline.rssMiB}), ${reading.runnerCores} cores, ${reading.traffic.kvOpsPerSec} KV ops/s, ${reading.traffic.jsApiPerSec} JetStream API requests/s`,
      );
    }
    return { ttlMs: day.idleTtlMs, sampleMs: day.idleSampleMs, baseline, readings };
  } finally {
    await nc.close();
    await cluster.stop();
  }
}
