import { closedLoop, type LoadResult, quietest } from "./load.ts";
import type { BenchPlan } from "./plan.ts";
import { cpuTimeMs, machineBusyMs } from "./procfs.ts";
import { progress } from "./progress.ts";
import { round } from "./stats.ts";

/** A whole turn pipeline in the bench's own process (LangGraph.js, or the turn statechart without NATS). */
export interface InProcessPipeline {
  name: string;
  runTurn(sessionId: string, text: string): Promise<{ response: string; ok: boolean; events?: number }>;
  /**
   * CPU time used so far by the pipeline's processes outside the bench's own (a database
   * server and its backends), in ms; counted in the pipeline's CPU per turn.
   */
  serverCpuMs?: () => number;
  /** Releases what the pipeline holds (a database pool). */
  close?: () => Promise<void>;
}

export interface InProcessLevel extends LoadResult {
  /** CPU per turn, ms: the bench process's, plus its server's when it has one (`serverCpuPerTurnMs`). */
  cpuPerTurnMs: number;
  /** Of `cpuPerTurnMs`, what the pipeline's server processes used (e.g. PostgreSQL's backends); absent without one. */
  serverCpuPerTurnMs?: number;
  /** CPU used meanwhile by processes outside the bench, in cores. */
  backgroundCores: number;
}

export interface InProcessResult {
  name: string;
  levels: InProcessLevel[];
}

/** Warms the pipeline up, then runs the same closed-loop levels as the distributed runtime. */
export async function runInProcess(
  pipeline: InProcessPipeline,
  plan: BenchPlan,
  tag: string,
): Promise<InProcessResult> {
  const turn = (prefix: string) => async (session: number, index: number) => {
    const started = performance.now();
    const result = await pipeline.runTurn(`${prefix}-${session}`, plan.texts[index % plan.texts.length]!);
    return { latencyMs: performance.now() - started, events: result.events ?? 0, ok: result.ok };
  };
  progress(`${pipeline.name}: warm-up (${plan.inProcessWarmupTurns} turns)`);
  await closedLoop({
    sessions: 10,
    turnsPerSession: Math.ceil(plan.inProcessWarmupTurns / 10),
    runTurn: turn(`${tag}-warm`),
  });
  const levels: InProcessLevel[] = [];
  for (const sessions of plan.levels) {
    const prefix = `${tag}-c${sessions}`;
    await closedLoop({ sessions, durationMs: plan.levelWarmupMs, runTurn: turn(prefix) });
    const measure = async (): Promise<InProcessLevel> => {
      const ownBefore = cpuTimeMs(process.pid);
      const serverBefore = pipeline.serverCpuMs?.() ?? 0;
      const machineBefore = machineBusyMs();
      const load = await closedLoop({
        sessions,
        durationMs: plan.levelMs,
        runTurn: turn(prefix),
        onTick: (done, elapsed) =>
          progress(`  ${pipeline.name} c=${sessions}: ${done} turns, ${((done / elapsed) * 1000).toFixed(0)} turns/s`),
      });
      const server = (pipeline.serverCpuMs?.() ?? 0) - serverBefore;
      const own = cpuTimeMs(process.pid) - ownBefore + server;
      const turns = Math.max(1, load.turns);
      return {
        ...load,
        cpuPerTurnMs: round(own / turns, 3),
        ...(pipeline.serverCpuMs ? { serverCpuPerTurnMs: round(server / turns, 3) } : {}),
        backgroundCores: round(Math.max(0, machineBusyMs() - machineBefore - own) / load.elapsedMs, 2),
      };
    };
    const result = await quietest(measure, (first) =>
      progress(`${pipeline.name} c=${sessions}: other processes used ${first.backgroundCores} cores; measuring again`),
    );
    progress(
      `${pipeline.name} c=${sessions}: ${result.turnsPerSec} turns/s, p50 ${result.latency.p50} ms, p99 ${result.latency.p99} ms`,
    );
    levels.push(result);
  }
  return { name: pipeline.name, levels };
}
