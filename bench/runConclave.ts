import { mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { busOptions, connectBus } from "../src/bus/connection.ts";
import { type BenchCluster, startBenchCluster } from "./cluster.ts";
import { conclaveLevel, conclaveTurn, type LevelResult, warmUp } from "./conclave.ts";
import { type FloorResult, measureFloor } from "./floor.ts";
import { analyseHops, type HopAnalysis, Wiretap } from "./hops.ts";
import { quietest } from "./load.ts";
import { type IdleSessionMemory, measureIdleSessions } from "./memory.ts";
import type { BenchPlan } from "./plan.ts";
import { processMemory } from "./procfs.ts";
import { type ProfileSummary, summarizeProfile } from "./profile.ts";
import { progress } from "./progress.ts";
import type { Scenario } from "./scenarios.ts";
import { breakdown, type StageBreakdown, type TurnTrace } from "./stages.ts";

export interface PeakRss {
  process: string;
  pid: number;
  peakRssKb: number;
  rssKb: number;
}

export interface ProfileRun {
  directory: string;
  sessions: number;
  level: LevelResult;
  summaries: ProfileSummary[];
}

export interface ConclaveRun {
  scenario: string;
  title: string;
  processes: { name: string; pid: number }[];
  hops: HopAnalysis;
  /** `floor`, `profile` and `idle` are null only in results of older runs (read again by `--render`). */
  floor: FloorResult | null;
  levels: LevelResult[];
  breakdown: StageBreakdown;
  profile: ProfileRun | null;
  idle: IdleSessionMemory | null;
  peakRss: PeakRss[];
}

/** Counts the turn's hops on the wire: a few turns one at a time, with a wiretap on. */
async function traceHops(cluster: BenchCluster, plan: BenchPlan, tag: string): Promise<HopAnalysis> {
  progress(`tracing ${plan.traceTurns} turns on the wire to count sequential hops`);
  const client = await connectBus(busOptions("client", { servers: cluster.url, name: "bench-trace-client" }));
  const observer = await cluster.connectInstrument("bench-wiretap");
  try {
    const tap = await Wiretap.start(observer);
    for (let i = 0; i < plan.traceTurns; i++) {
      await conclaveTurn(client, `${tag}-trace`, plan.texts[i % plan.texts.length]!);
      // Let the runner finish the turn's bookkeeping, so each turn's hops are its own.
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
    return analyseHops(tap.stop());
  } finally {
    await client.close();
    await observer.close();
  }
}

/** Profiles the runner and the workers (V8 sampling profiler, in-process) during a run at `sessions`. */
export async function profileRun(
  cluster: BenchCluster,
  run: () => Promise<LevelResult>,
  sessions: number,
  tag: string,
): Promise<ProfileRun> {
  const directory = join(tmpdir(), `conclave-bench-${tag}`);
  mkdirSync(directory, { recursive: true });
  await Promise.all(cluster.processes.map((p) => cluster.control(p, { bench: "profile-start", intervalUs: 200 })));
  const level = await run();
  const summaries: ProfileSummary[] = [];
  for (const p of cluster.processes) {
    const path = join(directory, `${p.name.replace(/[^\w-]+/g, "_")}.cpuprofile`);
    await cluster.control(p, { bench: "profile-stop", path });
    summaries.push(summarizeProfile(path, p.name));
  }
  return { directory, sessions, level, summaries };
}

/** Everything measured on one distributed deployment: nats-server, a runner and three workers. */
export async function runConclaveScenario(scenario: Scenario, plan: BenchPlan, tag: string): Promise<ConclaveRun> {
  progress(`[${scenario.id}] starting nats-server (free port, temporary store), a runner and three workers`);
  const cluster = await startBenchCluster();
  const nc = await connectBus(busOptions("client", { servers: cluster.url, name: "bench-client" }));
  try {
    progress(
      `[${scenario.id}] up on ${cluster.url}: ${cluster
        .pids()
        .map((p) => `${p.name} ${p.pid}`)
        .join(", ")}`,
    );
    await warmUp(nc, plan, `${tag}-${scenario.id}`);
    const hops = await traceHops(cluster, plan, `${tag}-${scenario.id}`);
    progress(
      `[${scenario.id}] ${hops.hops} sequential hops between TURN_STARTED and TURN_COMPLETED (${hops.turnRtts} round trips with nested ones); ${hops.submit.rtts} round trips for the submission, ${hops.startRtts} more before TURN_STARTED, ${hops.finishRtts} after TURN_COMPLETED; ${hops.eventAppends} event-log messages`,
    );
    progress(`[${scenario.id}] floor: NATS request/reply and JetStream publish on the same server`);
    const floor = await measureFloor(cluster.connectInstrument, {
      requestBytes: 1_024,
      eventBytes: hops.meanEventBytes || 300,
    });
    progress(
      `[${scenario.id}] floor: round trip p50 ${floor.requestReply.p50} ms; JetStream publish ${floor.jsPublishSequential.p50} ms sequential, ${floor.jsPublishPipelinedPerEventMs} ms/event pipelined`,
    );
    const levels: LevelResult[] = [];
    const traces: TurnTrace[] = [];
    for (const sessions of plan.levels) {
      const prefix = `${tag}-${scenario.id}-c${sessions}`;
      const label = `Conclave c=${sessions}`;
      progress(`[${scenario.id}] ${label}: ${plan.levelWarmupMs} ms warm-up, then ${plan.levelMs} ms measured`);
      await conclaveLevel(cluster, nc, plan, { prefix, sessions, durationMs: plan.levelWarmupMs });
      // Each attempt keeps its own traces, so the breakdown comes from the attempt that is kept.
      const measure = async () => {
        const attempt: TurnTrace[] = [];
        const result = await conclaveLevel(cluster, nc, plan, {
          prefix,
          sessions,
          durationMs: plan.levelMs,
          label,
          ...(sessions === 1 ? { traces: attempt } : {}),
        });
        return { ...result, attempt };
      };
      const { attempt, ...level } = await quietest(measure, (first) =>
        progress(`[${scenario.id}] ${label}: other processes used ${first.backgroundCores} cores; measuring again`),
      );
      traces.push(...attempt);
      progress(
        `[${scenario.id}] ${label}: ${level.turnsPerSec} turns/s, ${level.eventsPerSec} events/s, p50 ${level.latency.p50} ms (runner ${level.runtime?.p50} ms), p99 ${level.latency.p99} ms, ${level.failed} not Complete`,
      );
      levels.push(level);
    }
    const profiled = Math.max(...plan.levels);
    progress(`[${scenario.id}] profiling the runner and workers: ${plan.profileMs} ms at c=${profiled}`);
    const profile = await profileRun(
      cluster,
      () =>
        conclaveLevel(cluster, nc, plan, {
          prefix: `${tag}-${scenario.id}-c${profiled}`,
          sessions: profiled,
          durationMs: plan.profileMs,
        }),
      profiled,
      `${tag}-${scenario.id}`,
    );
    progress(`[${scenario.id}] profiles in ${profile.directory}`);
    // Warm-up (10 + 100), the trace (1) and each level's sessions are still there, idle.
    const existing = 10 + 100 + 1 + plan.levels.reduce((sum, sessions) => sum + sessions, 0);
    const idle = await measureIdleSessions(cluster, nc, plan, `${tag}-${scenario.id}`, existing);
    progress(
      `[${scenario.id}] runner memory per idle session: ${idle.heapPerSessionBytes} B heap, ${idle.rssPerSessionBytes} B RSS`,
    );
    const peakRss = [...cluster.pids(), { name: "bench client (after the Conclave runs)", pid: process.pid }].map(
      ({ name, pid }) => ({
        process: name,
        pid,
        ...(processMemory(pid) ?? { peakRssKb: Number.NaN, rssKb: Number.NaN }),
      }),
    );
    const runnerAheadMs = await cluster.clockOffset(cluster.runner);
    return {
      scenario: scenario.id,
      title: scenario.title,
      processes: cluster.pids(),
      hops,
      floor,
      levels,
      breakdown: breakdown(traces, runnerAheadMs),
      profile,
      idle,
      peakRss,
    };
  } finally {
    await nc.close();
    progress(`[${scenario.id}] stopping the cluster`);
    await cluster.stop();
  }
}
