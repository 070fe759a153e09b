import type { NatsConnection } from "@nats-io/nats-core";
import { isConclaveError } from "../src/errors.ts";
import { type AdmittedSample, admittedTurn } from "./admittedTurn.ts";
import type { BenchCluster } from "./cluster.ts";
import { type CpuUse, cpuUseSince } from "./conclave.ts";
import { closedLoop, type LoadResult } from "./load.ts";
import type { BenchPlan } from "./plan.ts";
import { cpuTimeMs, machineBusyMs } from "./procfs.ts";
import { progress } from "./progress.ts";
import { type ProfileRun, profileRun } from "./runConclave.ts";
import { SIMULATED_MODEL_MS, startSimulatedModelCluster } from "./simulatedModel.ts";
import { round, type Summary, summarize } from "./stats.ts";

/** One closed-loop level of the overload phase, split by how each turn was admitted. */
export interface OverloadLevel extends LoadResult {
  /** Turns that started at once (ack `admission.state: running`, or no admission reported and no TURN_QUEUED). */
  admitted: number;
  /** Turns that waited for a place (ack `queued` or a TURN_QUEUED event). */
  queued: number;
  /** `busy` answers (queues full), each retried after its hint. */
  busyAnswers: number;
  /** Turns whose submission was still answered `busy` when the level ended (not run). */
  rejected: number;
  /** Turns that ended other than Complete, or not at all (timeouts): what the overload degraded. */
  degraded: number;
  /** Outcome statuses of the turns that completed, e.g. { Complete: 900, PartialSuccess: 3 }. */
  statuses: Record<string, number>;
  /** True when at least one ack carried `admission` (a runner with admission control). */
  admissionReported: boolean;
  admittedLatency: Summary;
  queuedLatency: Summary | null;
  /** Largest queue position seen. */
  maxPosition: number;
  cpu: CpuUse[];
  backgroundCores: number;
}

export interface OverloadRun {
  modelLatencyMs: number;
  /** The same model, one session (the unloaded turn). */
  unloaded: OverloadLevel;
  baseline: OverloadLevel;
  overload: OverloadLevel;
  /** Profile of the runner and workers during the overload level. */
  profile: ProfileRun | null;
}

async function level(
  cluster: BenchCluster,
  nc: NatsConnection,
  plan: BenchPlan,
  options: { prefix: string; sessions: number; durationMs: number; label: string },
): Promise<OverloadLevel> {
  if (options.sessions > 1) {
    // Unmeasured: every session's first turn (it opens the session), so the level measures sessions that exist.
    progress(`  ${options.label}: each session's first turn, unmeasured`);
    await closedLoop({
      sessions: options.sessions,
      turnsPerSession: 1,
      runTurn: (session) =>
        admittedTurn(
          nc,
          `${options.prefix}-${session}`,
          plan.texts[session % plan.texts.length]!,
          Number.POSITIVE_INFINITY,
        ),
    });
  }
  const samples: AdmittedSample[] = [];
  let rejected = 0;
  const pids = [...cluster.pids(), { name: "bench client + model server", pid: process.pid }];
  const before = pids.map(({ pid }) => cpuTimeMs(pid));
  const machineBefore = machineBusyMs();
  const retryUntil = performance.now() + options.durationMs;
  const result = await closedLoop({
    sessions: options.sessions,
    durationMs: options.durationMs,
    runTurn: async (session, turn) => {
      try {
        const sample = await admittedTurn(
          nc,
          `${options.prefix}-${session}`,
          plan.texts[(session + turn) % plan.texts.length]!,
          retryUntil,
        );
        samples.push(sample);
        return sample;
      } catch (error) {
        if (isConclaveError(error, "busy")) rejected++;
        throw error;
      }
    },
    onTick: (completed, elapsedMs) =>
      progress(
        `  ${options.label}: ${completed} turns in ${round(elapsedMs / 1000, 1)} s, ${samples.filter((s) => s.admission === "queued").length} queued, ${samples.reduce((n, s) => n + s.busyAnswers, 0)} busy answers`,
      ),
  });
  const cpu = cpuUseSince(pids, before, result);
  const ours = cpu.reduce((sum, use) => sum + use.cpuMs, 0);
  const queued = samples.filter((s) => s.admission === "queued");
  const admitted = samples.filter((s) => s.admission !== "queued");
  const statuses: Record<string, number> = {};
  for (const s of samples) statuses[s.status] = (statuses[s.status] ?? 0) + 1;
  return {
    ...result,
    admitted: admitted.length,
    queued: queued.length,
    busyAnswers: samples.reduce((n, s) => n + s.busyAnswers, 0),
    rejected,
    degraded: result.failed - rejected,
    statuses,
    admissionReported: samples.some((s) => s.admission !== "unreported"),
    admittedLatency: summarize(admitted.map((s) => s.latencyMs)),
    queuedLatency: queued.length > 0 ? summarize(queued.map((s) => s.latencyMs)) : null,
    maxPosition: Math.max(0, ...samples.map((s) => s.position ?? 0)),
    cpu,
    backgroundCores: round(Math.max(0, machineBusyMs() - machineBefore - ours) / result.elapsedMs, 2),
  };
}

const describe = (label: string, l: OverloadLevel) =>
  `${label}: ${l.turnsPerSec} turns/s, admitted p50 ${round(l.admittedLatency.p50, 1)} ms p99 ${round(l.admittedLatency.p99, 1)} ms; ${l.admitted} admitted, ${l.queued} queued, ${l.busyAnswers} busy answers, ${l.rejected} rejected, ${l.degraded} degraded${l.admissionReported ? "" : " (the runner reports no admission)"}`;

/**
 * Overload: the full turn in LLM mode against the simulated model (every
 * call answered after 50 ms, as in the latency-hiding phase), one session
 * alone, then `baselineSessions` and `sessions` closed-loop sessions. Each
 * turn is classified by its admission; the big level is profiled.
 */
export async function runOverload(plan: BenchPlan, tag: string): Promise<OverloadRun> {
  const day = plan.busyDay;
  const { model, cluster, nc } = await startSimulatedModelCluster("bench-overload");
  try {
    progress(`busy day, overload: LLM mode, every model call answered after ${SIMULATED_MODEL_MS} ms; warming up`);
    const warm = await closedLoop({
      sessions: 10,
      turnsPerSession: 2,
      runTurn: (session, turn) =>
        admittedTurn(nc, `${tag}-ov-warm-${session}`, plan.texts[turn % plan.texts.length]!, Number.POSITIVE_INFINITY),
    });
    // A deployment that completes no turn would only measure its errors, thousands a second.
    if (warm.turns === 0) throw new Error(`no warm-up turn completed (${warm.failed} failed)`);
    const run = (sessions: number, durationMs: number, label: string) =>
      level(cluster, nc, plan, { prefix: `${tag}-ov-c${sessions}`, sessions, durationMs, label });
    const unloaded = await run(1, day.unloadedMs, "unloaded (c=1)");
    progress(`busy day, ${describe("unloaded (c=1)", unloaded)}`);
    const baseline = await run(day.baselineSessions, day.baselineMs, `c=${day.baselineSessions}`);
    progress(`busy day, ${describe(`c=${day.baselineSessions}`, baseline)}`);
    let overload: OverloadLevel | undefined;
    const profile = await profileRun(
      cluster,
      async () => {
        overload = await run(day.sessions, day.overloadMs, `c=${day.sessions}`);
        return overload;
      },
      day.sessions,
      `${tag}-busy-day`,
    ).catch((error: unknown) => {
      progress(`busy day: profiling failed (${error instanceof Error ? error.message : error})`);
      return null;
    });
    if (!overload) throw new Error("the overload level did not run");
    progress(`busy day, ${describe(`c=${day.sessions}`, overload)}`);
    if (profile) progress(`busy day: profiles of the c=${day.sessions} level in ${profile.directory}`);
    return { modelLatencyMs: SIMULATED_MODEL_MS, unloaded, baseline, overload, profile };
  } finally {
    await nc.close();
    await cluster.stop();
    await model.stop();
  }
}
