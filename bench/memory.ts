import type { NatsConnection } from "@nats-io/nats-core";
import type { BenchCluster } from "./cluster.ts";
import { conclaveTurn } from "./conclave.ts";
import { trafficBySubject, Wiretap } from "./hops.ts";
import { closedLoop } from "./load.ts";
import type { BenchPlan } from "./plan.ts";
import { cpuTimeMs, processMemory } from "./procfs.ts";
import { progress } from "./progress.ts";
import { round } from "./stats.ts";

export interface MemoryReading {
  sessions: number;
  heapUsedBytes: number;
  rssBytes: number;
  /** CPU the runner used while every session was idle (timers, leases, bookkeeping), in cores. */
  idleRunnerCores: number;
}

export interface IdleSessionMemory {
  method: string;
  /** Sessions the earlier phases had already opened (idle too). */
  existingSessions: number;
  readings: MemoryReading[];
  /** Requests per second on the wire while every session was idle, after the last step (top subjects). */
  idleTraffic: { subject: string; perSecond: number }[];
  /** Growth per idle session between the first and the last reading. */
  heapPerSessionBytes: number;
  rssPerSessionBytes: number;
}

const IDLE_SAMPLE_MS = 2_000;

/**
 * Runner memory per idle session: N new sessions each do one turn and go
 * idle; after each step the runner is told (over IPC, by the preloaded bench
 * hooks) to run a full GC twice, and its heap and RSS are read.
 */
export async function measureIdleSessions(
  cluster: BenchCluster,
  nc: NatsConnection,
  plan: BenchPlan,
  tag: string,
  existingSessions: number,
): Promise<IdleSessionMemory> {
  const read = async (sessions: number): Promise<MemoryReading> => {
    await new Promise((resolve) => setTimeout(resolve, 300)); // acks and timers of the last turns settle
    const reply = await cluster.control(cluster.runner, { bench: "gc" });
    const pid = cluster.runner.child.pid ?? -1;
    const rssKb = processMemory(pid)?.rssKb ?? Number.NaN;
    const cpuBefore = cpuTimeMs(pid);
    await new Promise((resolve) => setTimeout(resolve, IDLE_SAMPLE_MS));
    const idleRunnerCores = round((cpuTimeMs(pid) - cpuBefore) / IDLE_SAMPLE_MS, 3);
    return { sessions, heapUsedBytes: reply.memory?.heapUsed ?? Number.NaN, rssBytes: rssKb * 1024, idleRunnerCores };
  };
  const readings = [await read(0)];
  const perStep = plan.idleSessionsPerStep;
  const concurrency = 50;
  for (let step = 1; step <= 2; step++) {
    progress(`idle sessions: ${perStep} new sessions, one turn each (step ${step} of 2)`);
    const result = await closedLoop({
      sessions: concurrency,
      turnsPerSession: Math.ceil(perStep / concurrency),
      // Every turn opens a new session.
      runTurn: (session, turn) =>
        conclaveTurn(nc, `${tag}-idle${step}-${session}-${turn}`, plan.texts[turn % plan.texts.length]!),
    });
    readings.push(await read(readings.at(-1)!.sessions + result.turns));
  }
  // What the idle runtime does on the wire.
  const observer = await cluster.connectInstrument("bench-idle-tap");
  const tap = await Wiretap.start(observer);
  await new Promise((resolve) => setTimeout(resolve, IDLE_SAMPLE_MS));
  const idleTraffic = trafficBySubject(tap.stop(), IDLE_SAMPLE_MS / 1000).slice(0, 6);
  await observer.close();
  const first = readings[0]!;
  const last = readings.at(-1)!;
  const sessions = last.sessions - first.sessions;
  return {
    method:
      "runner heapUsed and VmRSS after two forced full GCs (V8 --expose-gc via the preloaded bench hooks), before and after each step",
    existingSessions,
    readings,
    idleTraffic,
    heapPerSessionBytes: round((last.heapUsedBytes - first.heapUsedBytes) / sessions, 0),
    rssPerSessionBytes: round((last.rssBytes - first.rssBytes) / sessions, 0),
  };
}
