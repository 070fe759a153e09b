/**
 * `npm run bench -- --cluster`: how Conclave's throughput scales on a
 * three-node NATS cluster (src/nats/cluster.ts, every stream and bucket R3)
 * as runners and workers are added, what each process spends per turn, and
 * what R3 costs against R1 (the same load on a single server). Every point
 * runs a fixed number of turns at a fixed concurrency with the offline model.
 *
 * One deployment serves the whole series, grown and shrunk between points:
 * 1 runner with 2, 4 and 8 workers, then 2 workers with 1, 2 and 4 runners
 * (the point 1 runner × 2 workers is measured once and shared).
 */
import type { NatsConnection } from "@nats-io/nats-core";
import { busOptions, connectBus } from "../src/bus/connection.ts";
import { type ConclaveProcess, spawnConclave } from "../src/cli/childProcess.ts";
import { startNatsCluster } from "../src/nats/cluster.ts";
import { startNatsServer } from "../src/nats/server.ts";
import { type CpuUse, conclaveTurn, cpuUseSince } from "./conclave.ts";
import { describeEnvironment } from "./environment.ts";
import { closedLoop } from "./load.ts";
import { type BenchPlan, wholeFromEnv } from "./plan.ts";
import { cpuTimeMs, machineBusyMs } from "./procfs.ts";
import { progress } from "./progress.ts";
import { round, type Summary } from "./stats.ts";

/** How much each point runs: BENCH_CLUSTER_TURNS (e.g. 20 for a smoke run) and BENCH_CLUSTER_SESSIONS. */
export interface ClusterScalingPlan {
  /** Measured turns per point (after one unmeasured turn per session). Default 200. */
  turns: number;
  /** Concurrent sessions (closed loop). Default 8. */
  sessions: number;
  /** Fewer turns than the default: a smoke run, whose numbers are not written to docs/. */
  smoke: boolean;
}

export const DEFAULT_CLUSTER_TURNS = 200;

export function clusterScalingPlan(env = process.env): ClusterScalingPlan {
  const whole = (name: string, fallback: number) => wholeFromEnv(name, fallback, env);
  const turns = whole("BENCH_CLUSTER_TURNS", DEFAULT_CLUSTER_TURNS);
  return { turns, sessions: whole("BENCH_CLUSTER_SESSIONS", 8), smoke: turns < DEFAULT_CLUSTER_TURNS };
}

/** CPU per turn of each kind of process, in ms (summed over the processes of that kind). */
export interface CpuPerTurn {
  runners: number;
  /** The busiest runner alone: a runner is one Node.js thread, so one core caps it. */
  busiestRunner: number;
  workers: number;
  /** Every nats-server node together. */
  nats: number;
  /** The busiest node alone (the one leading the most written streams). */
  busiestNats: number;
  /** The bench's client (submits and follows the turns). */
  client: number;
}

export interface ClusterScalingPoint {
  runners: number;
  workers: number;
  /** 3: the three-node cluster, every stream R3; 1: one server, R1. */
  replicas: 1 | 3;
  sessions: number;
  turns: number;
  failed: number;
  elapsedMs: number;
  turnsPerSec: number;
  latency: Summary;
  cpu: CpuUse[];
  perTurn: CpuPerTurn;
  /** CPU the deployment and the client used, in cores, over the point's wall time. */
  cores: number;
  /** CPU used meanwhile by other processes, in cores. */
  backgroundCores: number;
}

export interface ClusterScalingRun {
  plan: ClusterScalingPlan;
  environment: ReturnType<typeof describeEnvironment>;
  /** Workers fixed at 2: 1, 2 and 4 runners. */
  byRunners: ClusterScalingPoint[];
  /** Runners fixed at 1: 2, 4 and 8 workers. */
  byWorkers: ClusterScalingPoint[];
  /** 1 runner × 2 workers on one server with R1: against byRunners[0] (the same load, R3). */
  single: ClusterScalingPoint;
  durationS: number;
}

/** A runner's and a worker's arguments, as every scaling bench spawns them (also bench/scaleSlices.ts). */
export const RUNNER_ARGS = ["runner", "--cognition", "runner"];
export const WORKER_ARGS = ["worker", "--agents", "*", "--services", "memory"];

/** Runners and workers against one NATS deployment, each given one node's URL in turn. */
class Deployment {
  readonly runners: ConclaveProcess[] = [];
  readonly workers: ConclaveProcess[] = [];
  #spawned = 0;

  constructor(
    private readonly nodeUrls: readonly string[],
    private readonly natsPids: readonly number[],
    private readonly replicas: 1 | 3,
  ) {}

  async scale(runners: number, workers: number): Promise<void> {
    await this.#resize(this.workers, workers, "worker", WORKER_ARGS);
    await this.#resize(this.runners, runners, "runner", RUNNER_ARGS);
  }

  async #resize(group: ConclaveProcess[], size: number, kind: string, args: string[]): Promise<void> {
    while (group.length > size) await group.pop()!.stop();
    const added: ConclaveProcess[] = [];
    while (group.length + added.length < size) {
      const url = this.nodeUrls[this.#spawned++ % this.nodeUrls.length]!;
      added.push(
        spawnConclave(`${kind}-${group.length + added.length + 1}`, args, {
          ...process.env,
          CONCLAVE_NATS_URL: url,
          CONCLAVE_REPLICAS: String(this.replicas),
          CONCLAVE_LOG: "quiet",
        }),
      );
    }
    group.push(...added);
    await Promise.all(added.map((p) => p.ready));
  }

  pids(): { name: string; pid: number }[] {
    return [
      ...this.runners.map((p) => ({ name: p.name, pid: p.child.pid ?? -1 })),
      ...this.workers.map((p) => ({ name: p.name, pid: p.child.pid ?? -1 })),
      ...this.natsPids.map((pid, index) => ({ name: `nats-server-${index + 1}`, pid })),
      { name: "client", pid: process.pid },
    ];
  }

  async stop(): Promise<void> {
    await Promise.all(this.runners.splice(0).map((p) => p.stop()));
    await Promise.all(this.workers.splice(0).map((p) => p.stop()));
  }
}

const sum = (uses: CpuUse[]) =>
  round(
    uses.reduce((total, use) => total + use.perTurnMs, 0),
    3,
  );
const most = (uses: CpuUse[]) => round(Math.max(0, ...uses.map((use) => use.perTurnMs)), 3);

/** CPU per turn by kind, from processes named `runner-…`, `worker-…`, `nats-server-…` and `client`. */
export function perTurnOf(cpu: CpuUse[]): CpuPerTurn {
  const of = (prefix: string) => cpu.filter((use) => use.process.startsWith(prefix));
  return {
    runners: sum(of("runner-")),
    busiestRunner: most(of("runner-")),
    workers: sum(of("worker-")),
    nats: sum(of("nats-server-")),
    busiestNats: most(of("nats-server-")),
    client: sum(of("client")),
  };
}

/** One point: a turn per session unmeasured (it opens the session), then `plan.turns` turns measured. */
async function measure(
  deployment: Deployment,
  nc: NatsConnection,
  bench: BenchPlan,
  plan: ClusterScalingPlan,
  point: { runners: number; workers: number; replicas: 1 | 3 },
  tag: string,
): Promise<ClusterScalingPoint> {
  await deployment.scale(point.runners, point.workers);
  const label = `R${point.replicas}, ${point.runners} runner(s) × ${point.workers} worker(s)`;
  const prefix = `${tag}-r${point.replicas}-${point.runners}x${point.workers}`;
  const turn = (session: number, index: number) =>
    conclaveTurn(nc, `${prefix}-${session}`, bench.texts[index % bench.texts.length]!);
  await closedLoop({ sessions: plan.sessions, turnsPerSession: 1, runTurn: turn });
  const pids = deployment.pids();
  const before = pids.map(({ pid }) => cpuTimeMs(pid));
  const machineBefore = machineBusyMs();
  const result = await closedLoop({
    sessions: plan.sessions,
    turnsPerSession: Math.ceil(plan.turns / plan.sessions),
    runTurn: (session, index) => turn(session, index + 1),
  });
  const cpu = cpuUseSince(pids, before, result);
  const ours = cpu.reduce((total, use) => total + use.cpuMs, 0);
  const measured: ClusterScalingPoint = {
    ...point,
    sessions: plan.sessions,
    turns: result.turns,
    failed: result.failed,
    elapsedMs: result.elapsedMs,
    turnsPerSec: result.turnsPerSec,
    latency: result.latency,
    cpu,
    perTurn: perTurnOf(cpu),
    cores: round(ours / result.elapsedMs, 2),
    backgroundCores: round(Math.max(0, machineBusyMs() - machineBefore - ours) / result.elapsedMs, 2),
  };
  progress(
    `  ${label}: ${measured.turnsPerSec} turns/s, p50 ${Math.round(measured.latency.p50)} ms, CPU/turn runners ${measured.perTurn.runners} ms, workers ${measured.perTurn.workers} ms, nats ${measured.perTurn.nats} ms${measured.failed ? `, ${measured.failed} failed` : ""}`,
  );
  return measured;
}

/** Runs the whole phase: the cluster series, then the single-server point. */
export async function runClusterScaling(bench: BenchPlan, tag: string): Promise<ClusterScalingRun> {
  const plan = clusterScalingPlan();
  const startedAt = performance.now();
  progress(
    `cluster scaling: 3 nodes R3, ${plan.turns} turns per point at ${plan.sessions} sessions${plan.smoke ? " (smoke: BENCH_CLUSTER_TURNS below the default)" : ""}`,
  );
  const cluster = await startNatsCluster({ nodes: 3, monitorPorts: false });
  let byRunners: ClusterScalingPoint[] = [];
  const byWorkers: ClusterScalingPoint[] = [];
  try {
    const deployment = new Deployment(
      cluster.urls,
      cluster.nodes.map((node) => node.process?.pid ?? -1),
      3,
    );
    const nc = await connectBus(busOptions("client", { servers: cluster.url, name: "bench-cluster-client" }));
    try {
      for (const workers of [2, 4, 8]) {
        byWorkers.push(await measure(deployment, nc, bench, plan, { runners: 1, workers, replicas: 3 }, tag));
      }
      byRunners = [byWorkers[0]!];
      for (const runners of [2, 4]) {
        byRunners.push(await measure(deployment, nc, bench, plan, { runners, workers: 2, replicas: 3 }, tag));
      }
    } finally {
      await nc.close();
      await deployment.stop();
    }
  } finally {
    await cluster.stop();
  }
  const server = await startNatsServer({});
  let single: ClusterScalingPoint;
  try {
    const deployment = new Deployment([server.url], [server.process.pid ?? -1], 1);
    const nc = await connectBus(busOptions("client", { servers: server.url, name: "bench-cluster-client" }));
    try {
      single = await measure(deployment, nc, bench, plan, { runners: 1, workers: 2, replicas: 1 }, tag);
    } finally {
      await nc.close();
      await deployment.stop();
    }
  } finally {
    await server.stop();
  }
  return {
    plan,
    environment: describeEnvironment(),
    byRunners,
    byWorkers,
    single,
    durationS: Math.round((performance.now() - startedAt) / 1000),
  };
}
