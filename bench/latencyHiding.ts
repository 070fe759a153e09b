import { conclaveTurn } from "./conclave.ts";
import { closedLoop, type LoadResult } from "./load.ts";
import type { BenchPlan } from "./plan.ts";
import { progress } from "./progress.ts";
import { SIMULATED_MODEL_MS, startSimulatedModelCluster } from "./simulatedModel.ts";
import { round } from "./stats.ts";

/** Every model call in this run waits this long before it answers. */
export { SIMULATED_MODEL_MS } from "./simulatedModel.ts";
export const LATENCY_HIDING_LEVELS = [100, 1_000];

export interface LatencyHidingLevel extends LoadResult {
  /** Model calls answered per second during the level. */
  modelCallsPerSec: number;
}

export interface LatencyHidingRun {
  modelLatencyMs: number;
  levels: LatencyHidingLevel[];
  /** Model calls of one turn, from a single turn run alone before the levels. */
  modelCallsPerTurn: number;
  /** That lone turn's latency: the sequential model calls set its floor. */
  loneTurnMs: number;
}

/**
 * Latency hiding: the full turn in LLM mode against a local OpenAI-compatible
 * server (the test suite's) that answers every call after 50 ms, with 100 and
 * 1000 sessions at once. While one turn waits on the model, the runner and the
 * workers serve the others: turns/s should grow with the sessions until the
 * CPU, not the model's latency, is the limit.
 */
export async function runLatencyHiding(plan: BenchPlan, tag: string): Promise<LatencyHidingRun> {
  const { model, cluster, nc } = await startSimulatedModelCluster("bench-latency-hiding");
  try {
    progress(`latency hiding: LLM mode, every model call answered after ${SIMULATED_MODEL_MS} ms`);
    for (let i = 0; i < 5; i++) await conclaveTurn(nc, `${tag}-lh-warm-${i}`, plan.texts[i % plan.texts.length]!);
    const before = model.requests.length;
    const lone = await conclaveTurn(nc, `${tag}-lh-lone`, plan.texts[0]!);
    const modelCallsPerTurn = model.requests.length - before;
    progress(
      `latency hiding: one turn alone took ${round(lone.latencyMs, 1)} ms and made ${modelCallsPerTurn} model calls`,
    );
    const levels: LatencyHidingLevel[] = [];
    for (const sessions of LATENCY_HIDING_LEVELS) {
      const calls = model.requests.length;
      const result = await closedLoop({
        sessions,
        durationMs: plan.quick ? 4_000 : 10_000,
        runTurn: (session, turn) =>
          conclaveTurn(nc, `${tag}-lh-${sessions}-${session}`, plan.texts[(session + turn) % plan.texts.length]!),
        onTick: (completed, elapsedMs) =>
          progress(`latency hiding, ${sessions} sessions: ${completed} turns in ${round(elapsedMs / 1000, 1)} s`),
      });
      const modelCallsPerSec = round((model.requests.length - calls) / (result.elapsedMs / 1000), 1);
      levels.push({ ...result, modelCallsPerSec });
      progress(
        `latency hiding, ${sessions} sessions: ${result.turnsPerSec} turns/s, p95 ${round(result.latency.p95, 1)} ms`,
      );
    }
    return { modelLatencyMs: SIMULATED_MODEL_MS, levels, modelCallsPerTurn, loneTurnMs: round(lone.latencyMs, 2) };
  } finally {
    await nc.close();
    await cluster.stop();
    await model.stop();
  }
}
