import type { NatsConnection } from "@nats-io/nats-core";
import { submitTurn, watchTurn } from "../src/client/turns.ts";
import { monotonicNow } from "../src/eventlog/clock.ts";
import type { BenchCluster } from "./cluster.ts";
import { closedLoop, type LoadResult, type TurnSample } from "./load.ts";
import type { BenchPlan } from "./plan.ts";
import { cpuTimeMs, machineBusyMs } from "./procfs.ts";
import { progress } from "./progress.ts";
import type { TracedEvent, TurnTrace } from "./stages.ts";
import { round } from "./stats.ts";

/**
 * One turn through the public protocol, as any client does it: request on
 * conclave.turn.submit.<session>, then follow the turn's events in the
 * JetStream log until TURN_COMPLETED (`submitTurn` + `watchTurn`).
 */
export async function conclaveTurn(
  nc: NatsConnection,
  sessionId: string,
  text: string,
  traces?: TurnTrace[],
): Promise<TurnSample> {
  const started = performance.now();
  const submittedAt = monotonicNow();
  // Optional fields take their protocol defaults on the runner.
  const ack = await submitTurn(nc, sessionId, { text } as Parameters<typeof submitTurn>[2]);
  const ackedAt = monotonicNow();
  const events: TracedEvent[] = [];
  let count = 0;
  const completed = await watchTurn(nc, ack, (event) => {
    count++;
    if (traces) {
      const payload = event.payload as { stage?: string; wave?: number; agent_count?: number };
      events.push({
        kind: event.kind,
        seq: event.seq,
        ts: event.ts_monotonic,
        stage: payload.stage,
        wave: payload.wave,
        agents: payload.agent_count,
      });
    }
  });
  const latencyMs = performance.now() - started;
  traces?.push({ submittedAt, ackedAt, seenAt: monotonicNow(), events });
  return {
    latencyMs,
    runtimeMs: completed.payload.total_time_ms,
    events: count,
    ok: completed.payload.outcome.status === "Complete",
  };
}

/** CPU each process used during a run, per turn and as a share of the machine. */
export interface CpuUse {
  process: string;
  cpuMs: number;
  perTurnMs: number;
  /** Of one core: 1.0 = one core busy the whole run. */
  cores: number;
}

/** Each process's CPU since `before` (its CPU time then, in `pids`' order), over a run of `turns` turns. */
export function cpuUseSince(
  pids: { name: string; pid: number }[],
  before: number[],
  run: { turns: number; elapsedMs: number },
): CpuUse[] {
  return pids.map(({ name, pid }, index) => {
    const cpuMs = cpuTimeMs(pid) - before[index]!;
    return {
      process: name,
      cpuMs: round(cpuMs, 0),
      perTurnMs: round(cpuMs / Math.max(1, run.turns), 3),
      cores: round(cpuMs / run.elapsedMs, 2),
    };
  });
}

export interface LevelResult extends LoadResult {
  cpu: CpuUse[];
  /** CPU used meanwhile by processes outside the bench (other work on the machine), in cores. */
  backgroundCores: number;
}

/** The process name of the bench's own client in `LevelResult.cpu`. */
export const BENCH_CLIENT = "bench client";

/**
 * CPU per turn of the deployment: every Conclave process and nats-server, the
 * bench client excluded (ms). The one figure behind the CPU table's total row,
 * the CPU target and the summary, so they always agree.
 */
export const clusterCpuPerTurnMs = (level: Pick<LevelResult, "cpu">): number =>
  round(
    level.cpu.filter((use) => use.process !== BENCH_CLIENT).reduce((sum, use) => sum + use.perTurnMs, 0),
    3,
  );

/** The same deployment's CPU in cores (share of one core over the level's wall time). */
export const clusterCores = (level: Pick<LevelResult, "cpu">): number =>
  round(
    level.cpu.filter((use) => use.process !== BENCH_CLIENT).reduce((sum, use) => sum + use.cores, 0),
    2,
  );

/** Runs `sessions` concurrent sessions of back-to-back turns and measures the CPU of every process meanwhile. */
export async function conclaveLevel(
  cluster: BenchCluster,
  nc: NatsConnection,
  plan: BenchPlan,
  options: { prefix: string; sessions: number; durationMs: number; traces?: TurnTrace[]; label?: string },
): Promise<LevelResult> {
  const pids = [...cluster.pids(), { name: BENCH_CLIENT, pid: process.pid }];
  const before = pids.map(({ pid }) => cpuTimeMs(pid));
  const machineBefore = machineBusyMs();
  const result = await closedLoop({
    sessions: options.sessions,
    durationMs: options.durationMs,
    runTurn: (session, turn) =>
      conclaveTurn(nc, `${options.prefix}-${session}`, plan.texts[turn % plan.texts.length]!, options.traces),
    onTick: options.label
      ? (done, elapsed) =>
          progress(`  ${options.label}: ${done} turns, ${((done / elapsed) * 1000).toFixed(0)} turns/s`)
      : undefined,
  });
  const cpu = cpuUseSince(pids, before, result);
  const ours = cpu.reduce((sum, use) => sum + use.cpuMs, 0);
  const backgroundCores = round(Math.max(0, machineBusyMs() - machineBefore - ours) / result.elapsedMs, 2);
  return { ...result, cpu, backgroundCores };
}

/** Turns before measuring: every process's JIT, the client's connection, the streams and the KV bucket. */
export async function warmUp(nc: NatsConnection, plan: BenchPlan, tag: string): Promise<void> {
  progress(`Conclave warm-up: ${plan.warmupTurns} turns over 10 and then 100 sessions`);
  const turn = (prefix: string) => (session: number, index: number) =>
    conclaveTurn(nc, `${prefix}-${session}`, plan.texts[index % plan.texts.length]!);
  await closedLoop({ sessions: 10, turnsPerSession: Math.ceil(plan.warmupTurns / 20), runTurn: turn(`${tag}-warm10`) });
  await closedLoop({
    sessions: 100,
    turnsPerSession: Math.ceil(plan.warmupTurns / 200),
    runTurn: turn(`${tag}-warm100`),
  });
}
