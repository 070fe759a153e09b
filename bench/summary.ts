import { type BusyDayRun, failed } from "./busyDay.ts";
import { clusterCpuPerTurnMs } from "./conclave.ts";
import type { BenchResults } from "./report.ts";
import type { Summary } from "./stats.ts";
import { type TracingCostRun, tracingOffShare } from "./tracingCost.ts";
import type { UnderLoadRun } from "./underLoad.ts";

/**
 * The figures of a run worth keeping in the repository beside docs/BENCHMARKS.md
 * (docs/benchmarks-summary.json): small enough to diff between runs. Every
 * result of the run goes to docs/benchmarks.json, which is not committed.
 */
export interface BenchSummary {
  command: string;
  date: string;
  commit: string;
  machine: { cpu: string; cores: number; memoryGiB: number; kernel: string };
  versions: Record<string, string>;
  quick: boolean;
  durationS: number;
  backgroundAtStartCores: number;
  /** `measured` is null for a target the run could not measure; `notMeasured` says why. */
  targets: { id: string; measured: number; goal: number; direction: string; met: boolean; notMeasured?: string }[];
  /** Closed-loop levels of the distributed turn and of each in-process pipeline. */
  levels: {
    system: string;
    sessions: number;
    turnsPerSec: number;
    eventsPerSec: number;
    latencyMs: Latency;
    /** The runner's own total_time_ms (Conclave only). */
    runnerLatencyMs?: Latency;
    /** CPU per turn: every Conclave process and nats-server without the bench client, or the in-process pipeline's. */
    cpuPerTurnMs: number;
    /** Of `cpuPerTurnMs`, the pipeline's database server's (LangGraph.js + PostgresSaver: PostgreSQL's processes). */
    serverCpuPerTurnMs?: number;
    notComplete: number;
  }[];
  floor: {
    roundTripMs: number;
    clientFloorMs: number;
    runnerFloorMs: number;
    sequentialHops: number;
    turnRoundTrips: number;
    eventAppends: number;
  } | null;
  idleSessionBytes: { heap: number; rss: number } | null;
  /** The PostgreSQL behind LangGraph.js + PostgresSaver (null: not in the run). */
  postgresSaver: { available: boolean; version?: string; reason?: string } | null;
  /** Tracing off and on at c=1 (null: not in the run, or the phase failed). */
  tracing: {
    p50OffMs: number;
    p50OnMs: number;
    p50Ratio: number;
    spansPerTurn: number;
    offNsPerSpan: number | null;
    offUsPerTurn: number | null;
  } | null;
  memoryRetrieval: { nodes: number; latencyMs: Latency; goalMs: number } | null;
  latencyHiding: {
    modelLatencyMs: number;
    loneTurnMs: number;
    levels: { sessions: number; turnsPerSec: number; latencyMs: Latency; notComplete: number }[];
  } | null;
  /** The busy day's figures (null: not in the run; a phase that could not run is left out). */
  busyDay: {
    overload?: {
      sessions: number;
      levels: {
        sessions: number;
        turnsPerSec: number;
        admittedLatencyMs: Latency;
        admitted: number;
        queued: number;
        busyAnswers: number;
        rejected: number;
        degraded: number;
      }[];
    };
    idle?: {
      baselineRssMiB: number;
      steps: { sessions: number; rssMiB: number; runnerCores: number; kvOpsPerSec: number; jsApiPerSec: number }[];
    };
    takeover?: { kills: number; resumedMs: Latency | null; completedMs: Latency | null; extraModelCalls: number };
  } | null;
  /** Issue 42's figures (null: not in the run; a phase that could not run is left out). */
  underLoad: {
    burst?: {
      sessions: number;
      runs: {
        completed: number;
        refusedBusy: number;
        failed: number;
        timedOut: number;
        poisoned: number;
        lapses: number;
        latencyMs: Latency;
      }[];
    };
    soak?: {
      turns: number;
      clients: number;
      maxConsumersPerClient: number;
      maxNatsRssMiB: number;
      natsCpuPerTurnMs: number;
      lapses: number;
    };
    takeover?: {
      kills: number;
      inFlight: number;
      takenOver: number;
      resumedMs: Latency | null;
      repeatedModelCalls: number;
    };
  } | null;
}

type Latency = Pick<Summary, "p50" | "p95" | "p99">;
const latency = ({ p50, p95, p99 }: Summary): Latency => ({ p50, p95, p99 });

/** JSON laid out to be read and diffed: one line per level, target or group of fields. */
function layOut(value: unknown, depth = 0): string {
  if (depth >= 2 || value === null || typeof value !== "object") return JSON.stringify(value);
  const items = Array.isArray(value)
    ? value.map((item) => layOut(item, depth + 1))
    : Object.entries(value).map(([key, item]) => `${JSON.stringify(key)}: ${layOut(item, depth + 1)}`);
  const [open, close] = Array.isArray(value) ? ["[", "]"] : ["{", "}"];
  if (items.length === 0) return `${open}${close}`;
  const indent = "  ".repeat(depth + 1);
  return `${open}\n${items.map((item) => `${indent}${item}`).join(",\n")}\n${"  ".repeat(depth)}${close}`;
}

/** docs/benchmarks-summary.json's text. */
export const benchSummaryJson = (results: BenchResults): string => `${layOut(benchSummary(results))}\n`;

export function benchSummary(results: BenchResults): BenchSummary {
  const run = results.conclave[0]!;
  const inProcess = results.inProcess.find((s) => s.scenario === run.scenario)?.pipelines ?? [];
  const env = results.environment;
  return {
    command: results.command,
    date: env.date,
    commit: env.commit,
    machine: { cpu: env.cpuModel, cores: env.cores, memoryGiB: env.memoryGiB, kernel: env.kernel },
    versions: env.versions,
    quick: results.plan.quick,
    durationS: results.durationS,
    backgroundAtStartCores: results.backgroundAtStartCores,
    targets: results.targets.map(({ id, measured, goal, direction, met, notMeasured }) => ({
      id,
      measured,
      goal,
      direction,
      met,
      ...(notMeasured === undefined ? {} : { notMeasured }),
    })),
    levels: [
      ...run.levels.map((level) => ({
        system: "Conclave distributed",
        sessions: level.sessions,
        turnsPerSec: level.turnsPerSec,
        eventsPerSec: level.eventsPerSec,
        latencyMs: latency(level.latency),
        ...(level.runtime ? { runnerLatencyMs: latency(level.runtime) } : {}),
        cpuPerTurnMs: clusterCpuPerTurnMs(level),
        notComplete: level.failed,
      })),
      ...inProcess.flatMap((pipeline) =>
        pipeline.levels.map((level) => ({
          system: pipeline.name,
          sessions: level.sessions,
          turnsPerSec: level.turnsPerSec,
          eventsPerSec: level.eventsPerSec,
          latencyMs: latency(level.latency),
          cpuPerTurnMs: level.cpuPerTurnMs,
          ...(level.serverCpuPerTurnMs === undefined ? {} : { serverCpuPerTurnMs: level.serverCpuPerTurnMs }),
          notComplete: level.failed,
        })),
      ),
    ],
    floor: results.floorModel
      ? {
          roundTripMs: results.floorModel.rttMs,
          clientFloorMs: results.floorModel.clientFloorMs,
          runnerFloorMs: results.floorModel.runnerFloorMs,
          sequentialHops: run.hops.hops,
          turnRoundTrips: run.hops.turnRtts,
          eventAppends: run.hops.eventAppends,
        }
      : null,
    idleSessionBytes: run.idle ? { heap: run.idle.heapPerSessionBytes, rss: run.idle.rssPerSessionBytes } : null,
    postgresSaver: results.postgresSaver
      ? {
          available: results.postgresSaver.available,
          ...(results.postgresSaver.version ? { version: results.postgresSaver.version } : {}),
          ...(results.postgresSaver.reason ? { reason: results.postgresSaver.reason } : {}),
        }
      : null,
    tracing: results.tracing && !("error" in results.tracing) ? tracingSummary(results.tracing) : null,
    memoryRetrieval: results.memoryRetrieval
      ? {
          nodes: results.memoryRetrieval.nodes,
          latencyMs: latency(results.memoryRetrieval.latency),
          goalMs: results.memoryRetrieval.goalMs,
        }
      : null,
    latencyHiding: results.latencyHiding
      ? {
          modelLatencyMs: results.latencyHiding.modelLatencyMs,
          loneTurnMs: results.latencyHiding.loneTurnMs,
          levels: results.latencyHiding.levels.map((level) => ({
            sessions: level.sessions,
            turnsPerSec: level.turnsPerSec,
            latencyMs: latency(level.latency),
            notComplete: level.failed,
          })),
        }
      : null,
    busyDay: results.busyDay ? busyDaySummary(results.busyDay) : null,
    underLoad: results.underLoad ? underLoadSummary(results.underLoad) : null,
  };
}

function tracingSummary(run: TracingCostRun): NonNullable<BenchSummary["tracing"]> {
  const micro = "error" in run.offMicro ? null : run.offMicro;
  return {
    p50OffMs: run.off.latency.p50,
    p50OnMs: run.on.latency.p50,
    p50Ratio: run.p50Ratio,
    spansPerTurn: run.spansPerTurn,
    offNsPerSpan: micro?.nsPerSpan ?? null,
    offUsPerTurn: tracingOffShare(run)?.usPerTurn ?? null,
  };
}

function busyDaySummary(run: BusyDayRun): NonNullable<BenchSummary["busyDay"]> {
  const { overload, idle, takeover } = run;
  return {
    ...(failed(overload)
      ? {}
      : {
          overload: {
            sessions: overload.overload.sessions,
            levels: [overload.unloaded, overload.baseline, overload.overload].map((level) => ({
              sessions: level.sessions,
              turnsPerSec: level.turnsPerSec,
              admittedLatencyMs: latency(level.admittedLatency),
              admitted: level.admitted,
              queued: level.queued,
              busyAnswers: level.busyAnswers,
              rejected: level.rejected,
              degraded: level.degraded,
            })),
          },
        }),
    ...(failed(idle)
      ? {}
      : {
          idle: {
            baselineRssMiB: idle.baseline.rssMiB,
            steps: idle.readings.map((r) => ({
              sessions: r.sessions,
              rssMiB: r.rssMiB,
              runnerCores: r.runnerCores,
              kvOpsPerSec: r.traffic.kvOpsPerSec,
              jsApiPerSec: r.traffic.jsApiPerSec,
            })),
          },
        }),
    ...(failed(takeover)
      ? {}
      : {
          takeover: {
            kills: takeover.kills.length,
            resumedMs: takeover.resumed ? latency(takeover.resumed) : null,
            completedMs: takeover.completed ? latency(takeover.completed) : null,
            extraModelCalls: takeover.extraModelCalls,
          },
        }),
  };
}

function underLoadSummary(run: UnderLoadRun): NonNullable<BenchSummary["underLoad"]> {
  const { burst, soak, takeover } = run;
  return {
    ...(failed(burst)
      ? {}
      : {
          burst: {
            sessions: burst.runs[0]?.sessions ?? 0,
            runs: burst.runs.map((r) => ({
              completed: r.completed,
              refusedBusy: r.refusedBusy,
              failed: r.failed,
              timedOut: r.timedOut,
              poisoned: r.poisoned,
              lapses: r.lapses,
              latencyMs: latency(r.latency),
            })),
          },
        }),
    ...(failed(soak)
      ? {}
      : {
          soak: {
            turns: soak.turns,
            clients: soak.clients,
            maxConsumersPerClient: soak.maxConsumersPerClient,
            maxNatsRssMiB: soak.maxNatsRssMiB,
            natsCpuPerTurnMs: soak.natsCpuPerTurnMs,
            lapses: soak.lapses,
          },
        }),
    ...(failed(takeover)
      ? {}
      : {
          takeover: {
            kills: takeover.kills.length,
            inFlight: takeover.inFlight,
            takenOver: takeover.kills.reduce((n, k) => n + k.takenOver, 0),
            resumedMs: takeover.resumed ? latency(takeover.resumed) : null,
            repeatedModelCalls: takeover.repeatedModelCalls,
          },
        }),
  };
}
