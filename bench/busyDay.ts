import { type IdleSessionsRun, runIdleSessions } from "./idleSessions.ts";
import { type OverloadRun, runOverload } from "./overload.ts";
import type { BenchPlan } from "./plan.ts";
import { progress } from "./progress.ts";
import { round } from "./stats.ts";
import { runTakeover, type TakeoverRun } from "./takeover.ts";
import { judge, type Target } from "./targets.ts";

/** "A busy day" (issue 23): overload, many idle sessions, runners killed mid-turn. A phase that could not run says why. */
export interface BusyDayRun {
  overload: OverloadRun | { error: string };
  idle: IdleSessionsRun | { error: string };
  takeover: TakeoverRun | { error: string };
  targets: Target[];
}

/** Goals of issue 23; the one marked "bench's goal" is this bench's reading of "independent of the number of sessions". */
export const BUSY_DAY_GOALS = {
  degradedTurns: 0,
  admittedP50VsUnloaded: 2,
  throughputVsBaseline: 0.8,
  /** Runner RSS within 50 MB of its baseline once the sessions are evicted. */
  idleRssAboveBaselineMiB: 50,
  idleRunnerCores: 0.02,
  /** Bench's goal: ten times the sessions, at most 1.5 times the KV traffic. */
  kvOpsGrowth: 1.5,
  takeoverP95Ms: 2_000,
  repeatedModelCalls: 0,
} as const;

export const failed = <T extends object>(phase: T | { error: string }): phase is { error: string } =>
  "error" in phase && typeof phase.error === "string";

async function attempt<T>(name: string, run: () => Promise<T>): Promise<T | { error: string }> {
  try {
    return await run();
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    progress(`busy day: the ${name} phase failed: ${message}`);
    return { error: message };
  }
}

/** The three phases, one deployment each, one after the other. */
export async function runBusyDay(plan: BenchPlan, tag: string): Promise<BusyDayRun> {
  const overload = await attempt("overload", () => runOverload(plan, tag));
  const idle = await attempt("idle sessions", () => runIdleSessions(plan, tag));
  const takeover = await attempt("takeover", () => runTakeover(plan, tag));
  const run = { overload, idle, takeover, targets: [] as Target[] };
  run.targets = busyDayTargets(run);
  return run;
}

/** The busy day's targets, judged on its phases (those that ran). */
export function busyDayTargets(run: Omit<BusyDayRun, "targets">): Target[] {
  const g = BUSY_DAY_GOALS;
  const targets: Target[] = [];
  if (!failed(run.overload)) {
    const { unloaded, baseline, overload } = run.overload;
    const c = overload.sessions;
    targets.push(
      judge(
        "busy-degraded",
        `No turn ends degraded (not Complete, or not at all) by overload at ${c} sessions`,
        overload.degraded,
        g.degradedTurns,
        "≤",
        " turns",
        `${overload.turns} turns completed (${Object.entries(overload.statuses)
          .map(([status, n]) => `${n} ${status}`)
          .join(
            ", ",
          )}); ${overload.admitted} admitted, ${overload.queued} queued, ${overload.busyAnswers} busy answers, ${overload.rejected} rejected`,
      ),
      judge(
        "busy-p50-vs-unloaded",
        `p50 of admitted turns at ${c} sessions, from admission (TURN_STARTED) to TURN_COMPLETED, within 2x of the unloaded turn (same ${run.overload.modelLatencyMs} ms model, c=1)`,
        (overload.runtime?.p50 ?? Number.NaN) / (unloaded.runtime?.p50 ?? Number.NaN),
        g.admittedP50VsUnloaded,
        "≤",
        "x",
        `runner's p50 ${round(overload.runtime?.p50 ?? Number.NaN, 1)} ms at c=${c} ÷ ${round(unloaded.runtime?.p50 ?? Number.NaN, 1)} ms at c=1; from submission, the turns that ran at once took p50 ${round(overload.admittedLatency.p50, 1)} ms, the queued ones ${round(overload.queuedLatency?.p50 ?? Number.NaN, 1)} ms`,
      ),
      judge(
        "busy-throughput-vs-baseline",
        `Throughput at ${c} sessions at least 80% of ${baseline.sessions} sessions' (same model)`,
        overload.turnsPerSec / baseline.turnsPerSec,
        g.throughputVsBaseline,
        "≥",
        "x",
        `${overload.turnsPerSec} turns/s at c=${c} ÷ ${baseline.turnsPerSec} at c=${baseline.sessions}`,
      ),
    );
  }
  if (!failed(run.idle) && run.idle.readings.length > 0) {
    const { baseline, readings } = run.idle;
    const first = readings[0]!;
    const last = readings.at(-1)!;
    targets.push(
      judge(
        "idle-rss-vs-baseline",
        `Runner RSS within ${g.idleRssAboveBaselineMiB} MB of its baseline once ${last.sessions} idle sessions are evicted (after the TTL and a GC, minus before them)`,
        Math.round((last.rssMiB - baseline.rssMiB) * 10) / 10,
        g.idleRssAboveBaselineMiB,
        "≤",
        "MiB",
        `${last.rssMiB} MiB − ${baseline.rssMiB} MiB (${last.rssAfterOpenMiB} MiB right after opening them)`,
      ),
      judge(
        "idle-runner-cpu",
        `Runner CPU while ${last.sessions} sessions are idle`,
        last.runnerCores,
        g.idleRunnerCores,
        "≤",
        " cores",
        `over ${round(run.idle.sampleMs / 1000, 1)} s, from /proc`,
      ),
      judge(
        "idle-kv-independent",
        `KV operations/s while idle independent of the sessions (at ${last.sessions} ÷ at ${first.sessions}, each at least 1/s)`,
        Math.max(1, last.traffic.kvOpsPerSec) / Math.max(1, first.traffic.kvOpsPerSec),
        g.kvOpsGrowth,
        "≤",
        "x",
        `${last.traffic.kvOpsPerSec}/s at ${last.sessions} idle, ${first.traffic.kvOpsPerSec}/s at ${first.sessions}`,
      ),
    );
  }
  if (!failed(run.takeover) && run.takeover.kills.length > 0) {
    const t = run.takeover;
    if (t.resumed)
      targets.push(
        judge(
          "takeover-p95",
          `A runner killed (SIGKILL) mid-turn: p95 from the kill to the turn's TURN_RESUMED`,
          t.resumed.p95,
          g.takeoverP95Ms,
          "≤",
          " ms",
          `${t.resumed.n} of ${t.kills.length} kills resumed; p50 ${round(t.resumed.p50, 0)} ms; to TURN_COMPLETED p50 ${round(t.completed?.p50 ?? Number.NaN, 0)} ms, p95 ${round(t.completed?.p95 ?? Number.NaN, 0)} ms`,
        ),
      );
    targets.push(
      judge(
        "takeover-repeated-calls",
        "A turn taken over makes no model call again (calls beyond an undisturbed turn's, all kills)",
        t.extraModelCalls,
        g.repeatedModelCalls,
        "≤",
        " calls",
        `${t.kills.length} kills; an undisturbed turn makes ${t.modelCallsPerTurn} calls; ${t.repeatedModelCalls} identical repeats`,
      ),
    );
  }
  return targets;
}
