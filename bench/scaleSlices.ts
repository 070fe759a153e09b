/**
 * `npm run bench -- --scale` (issue 36, item 4): how throughput scales when each "machine" is a CPU
 * slice. A slice is one runner and its two workers in a cgroup of a fixed CPU quota
 * (bench/cgroups.ts); each NATS node gets a slice of its own. k = 1, 2 and 4 slices run at equal
 * quota and equal load per slice (a closed loop of a fixed number of sessions per slice), once per
 * series: a number of NATS nodes (one node R1, more R3) and of event-log streams S (the runners'
 * `CONCLAVE_EVENT_STREAMS`), by default 1 node S = 1, 3 nodes S = 1, 5 nodes S = 1 and 5 nodes S = 5.
 * Then, unsliced on the whole machine: 1 runner against 3 runners (2 workers), on a three-node
 * cluster, S = 3. Last, on the same, 2 runners join 1 mid-load (bench/scaleJoin.ts).
 * BENCH_SCALE_PHASES runs only some of the three.
 *
 * Where the machine allows network namespaces (root, `ip netns`), each NATS node of the sliced
 * series of 3 and 5 nodes runs in a namespace of its own (test/helpers/netns.ts), so the runners and workers reach
 * NATS, and the nodes one another, over a bridge rather than loopback; the runners and workers stay
 * in the host's namespace. One node stays on loopback: a JetStream cluster of one node does not
 * start (it needs routes), and a lone server has no launcher to run it in a namespace. Where cgroups are unavailable the same points run unsliced, and the run
 * says so. It only spawns `conclave runner`
 * and `conclave worker` processes and measures them: nothing here knows how runners share sessions.
 */
import type { NatsConnection } from "@nats-io/nats-core";
import { busOptions, connectBus } from "../src/bus/connection.ts";
import { type ConclaveProcess, spawnConclave } from "../src/cli/childProcess.ts";
import { startNatsCluster } from "../src/nats/cluster.ts";
import { startNatsServer } from "../src/nats/server.ts";
import { netnsSupport, startNetnsCluster } from "../test/helpers/netns.ts";
import { type CgroupSupport, type CpuSlice, CpuSlices, cgroupSupport } from "./cgroups.ts";
import { withBenchHooks } from "./cluster.ts";
import { type CpuPerTurn, perTurnOf, RUNNER_ARGS, WORKER_ARGS } from "./clusterScaling.ts";
import { type CpuUse, conclaveTurn, cpuUseSince } from "./conclave.ts";
import { describeEnvironment } from "./environment.ts";
import { closedLoop } from "./load.ts";
import type { BenchPlan } from "./plan.ts";
import { cpuTimeMs, machineBusyMs } from "./procfs.ts";
import { progress } from "./progress.ts";
import { type JoinResult, runJoin } from "./scaleJoin.ts";
import { type ScalePlan, type SeriesShape, scalePlan, UNSLICED_EVENT_STREAMS } from "./scalePlan.ts";
import {
  type PointProfile,
  scaleProfileDirectory,
  startProfiles,
  stopProfiles,
  storeSequences,
  writesPerTurn,
} from "./scaleProfile.ts";
import { round, type Summary } from "./stats.ts";

/** One measured point. */
export interface ScalePoint {
  natsNodes: number;
  /** Streams of the event log, S. */
  eventStreams: number;
  /** Slices of runner and workers; 0 for the unsliced points. */
  slices: number;
  runners: number;
  workers: number;
  sessions: number;
  turns: number;
  failed: number;
  elapsedMs: number;
  turnsPerSec: number;
  latency: Summary;
  cpu: CpuUse[];
  perTurn: CpuPerTurn;
  /** CPU per turn of each NATS node, in node order, in ms. */
  natsNodePerTurn: number[];
  /** How long the quota held the runner-and-workers slices back over the point, summed, in ms (0 unsliced). */
  throttledMs: number;
  /** CPU the deployment and the client used, in cores, over the point's wall time. */
  cores: number;
  /** CPU used meanwhile by other processes, in cores. */
  backgroundCores: number;
  /** Where the runners' and workers' CPU went, per turn (`BENCH_SCALE_PROFILE=1`). */
  profile?: PointProfile;
}

export interface ScaleSeries {
  natsNodes: number;
  /** Streams of the event log, S: every runner of the series had `CONCLAVE_EVENT_STREAMS` so. */
  eventStreams: number;
  replicas: 1 | 3;
  points: ScalePoint[];
}

export interface ScaleRun {
  plan: ScalePlan;
  environment: ReturnType<typeof describeEnvironment>;
  /** "v1", "v2", or why the points ran unsliced. */
  cgroups: string;
  /** How the slices reach NATS. */
  network: string;
  series: ScaleSeries[];
  /** Unsliced, on the whole machine, a three-node cluster and S = 3: 1 runner, then 3 runners (2 workers each). */
  unsliced: ScalePoint[];
  /** Two runners joining one mid-load (bench/scaleJoin.ts); absent when the phase did not run. */
  join?: JoinResult;
  durationS: number;
}

/** A NATS deployment for one series: its URLs and node pids, each node in its own slice when sliced. */
interface Nats {
  urls: readonly string[];
  pids: number[];
  stop(): Promise<void>;
}

async function startNats(
  nodes: number,
  slices: CpuSlices | null,
  quota: number,
  bridge: boolean,
  name: string,
): Promise<Nats> {
  const deployment = bridge
    ? await startNetnsCluster(nodes).then(({ cluster }) => ({
        urls: cluster.urls,
        pids: cluster.nodes.map((node) => node.process?.pid ?? -1),
        stop: () => cluster.stop(),
      }))
    : nodes === 1
      ? await startNatsServer({}).then((server) => ({
          urls: [server.url],
          pids: [server.process.pid ?? -1],
          stop: () => server.stop(),
        }))
      : await startNatsCluster({ nodes, monitorPorts: false }).then((cluster) => ({
          urls: cluster.urls,
          pids: cluster.nodes.map((node) => node.process?.pid ?? -1),
          stop: () => cluster.stop(),
        }));
  for (const [index, pid] of deployment.pids.entries()) slices?.make(`nats-${name}-${index + 1}`, quota).add(pid);
  return deployment;
}

/** How many times a runner or worker is started before its failing to be ready ends the run. */
const MAX_STARTS = 3;

/** Runners and workers, grown between points; a slice's processes join its cgroup as soon as they are spawned. */
export class Machines {
  readonly processes: ConclaveProcess[] = [];
  readonly slices: CpuSlice[] = [];
  #spawned = 0;

  constructor(
    private readonly nats: Nats,
    private readonly replicas: 1 | 3,
    private readonly eventStreams: number,
    /** Where CPU profiles go (`BENCH_SCALE_PROFILE=1`): the processes start with the bench hooks. */
    readonly profileDirectory: string | null = scaleProfileDirectory(),
  ) {}

  /** Spawns `runners` runners and `workers` workers, in `slice` when given; resolves once all serve. */
  async add(tag: string, runners: number, workers: number, slice: CpuSlice | null): Promise<void> {
    const start = async (name: string, args: string[]) => {
      const url = this.nats.urls[this.#spawned++ % this.nats.urls.length]!;
      const env = {
        ...process.env,
        CONCLAVE_NATS_URL: url,
        CONCLAVE_REPLICAS: String(this.replicas),
        // Fixed by the first runner, which makes the log; every runner asks the same.
        CONCLAVE_EVENT_STREAMS: String(this.eventStreams),
      };
      for (let attempt = 1; ; attempt++) {
        // A slice of half a core starts a TypeScript process slowly: more than the default 20 s to be ready.
        const quiet = { ...env, CONCLAVE_LOG: "quiet" };
        const child = spawnConclave(name, args, this.profileDirectory ? withBenchHooks(quiet) : quiet, 120_000);
        if (slice && child.child.pid !== undefined) slice.add(child.child.pid);
        this.processes.push(child);
        try {
          return await child.ready;
        } catch (error) {
          // A process that gave up on NATS (a cluster of 5 in slices still placing its streams)
          // exits before it is ready: start it again, twice at most.
          this.processes.splice(this.processes.indexOf(child), 1);
          await child.stop();
          if (attempt === MAX_STARTS) throw error;
          progress(`  ${name} exited before it was ready, starting it again: ${(error as Error).message}`);
        }
      }
    };
    const started: Promise<void>[] = [];
    for (let w = 1; w <= workers; w++) started.push(start(`worker-${tag}-${w}`, WORKER_ARGS));
    for (let r = 1; r <= runners; r++) started.push(start(`runner-${tag}${runners > 1 ? `-${r}` : ""}`, RUNNER_ARGS));
    if (slice) this.slices.push(slice);
    await Promise.all(started);
  }

  /** The NATS URLs the processes were given. */
  get natsUrls(): readonly string[] {
    return this.nats.urls;
  }

  pids(): { name: string; pid: number }[] {
    return [
      ...this.processes.map((p) => ({ name: p.name, pid: p.child.pid ?? -1 })),
      ...this.nats.pids.map((pid, index) => ({ name: `nats-server-${index + 1}`, pid })),
      { name: "client", pid: process.pid },
    ];
  }

  throttledMs(): number {
    return this.slices.reduce((total, slice) => total + slice.throttledMs(), 0);
  }

  /** Stops runners first, then workers. */
  async stop(): Promise<void> {
    const all = this.processes.splice(0);
    await Promise.all(all.filter((p) => p.name.startsWith("runner-")).map((p) => p.stop()));
    await Promise.all(all.map((p) => p.stop()));
    this.slices.splice(0);
  }
}

/** One point: a turn per session unmeasured (it opens the session), then the plan's turns measured. */
async function measure(
  machines: Machines,
  nc: NatsConnection,
  bench: BenchPlan,
  plan: ScalePlan,
  shape: { natsNodes: number; eventStreams: number; slices: number; runners: number; workers: number },
  prefix: string,
): Promise<ScalePoint> {
  const perSlice = Math.max(1, shape.slices);
  const sessions = plan.sessionsPerSlice * perSlice;
  const turn = (session: number, index: number) =>
    conclaveTurn(nc, `${prefix}-${session}`, bench.texts[index % bench.texts.length]!);
  await closedLoop({ sessions, turnsPerSession: 1, runTurn: turn });
  const pids = machines.pids();
  const before = pids.map(({ pid }) => cpuTimeMs(pid));
  const machineBefore = machineBusyMs();
  const throttledBefore = machines.throttledMs();
  const directory = machines.profileDirectory;
  const profiled = directory ? await startProfiles(machines.processes) : [];
  // The observer role reads every store's state (`conclave status` does); the client role may not.
  const observer = directory
    ? await connectBus(busOptions("observer", { servers: machines.natsUrls.join(","), name: "bench-scale-observer" }))
    : null;
  const sequences = observer ? await storeSequences(observer, shape.eventStreams) : null;
  const result = await closedLoop({
    sessions,
    turnsPerSession: Math.ceil(plan.turnsPerSlice / plan.sessionsPerSlice),
    runTurn: (session, index) => turn(session, index + 1),
  });

  const cpu = cpuUseSince(pids, before, result);
  const ours = cpu.reduce((total, use) => total + use.cpuMs, 0);
  const perTurn = perTurnOf(cpu);
  const writes =
    observer && sequences
      ? writesPerTurn(sequences, await storeSequences(observer, shape.eventStreams), result.turns)
      : [];
  await observer?.close();
  const profile = directory ? await stopProfiles(profiled, directory, prefix, perTurn, writes) : undefined;
  const point: ScalePoint = {
    ...shape,
    sessions,
    turns: result.turns,
    failed: result.failed,
    elapsedMs: result.elapsedMs,
    turnsPerSec: result.turnsPerSec,
    latency: result.latency,
    cpu,
    perTurn,
    natsNodePerTurn: cpu.filter((use) => use.process.startsWith("nats-server-")).map((use) => use.perTurnMs),
    throttledMs: round(machines.throttledMs() - throttledBefore, 0),
    cores: round(ours / result.elapsedMs, 2),
    backgroundCores: round(Math.max(0, machineBusyMs() - machineBefore - ours) / result.elapsedMs, 2),
    ...(profile ? { profile } : {}),
  };
  const what = shape.slices > 0 ? `${shape.slices} slice(s)` : `unsliced ${shape.runners} runner(s)`;
  progress(
    `  ${shape.natsNodes} NATS node(s), S = ${shape.eventStreams}, ${what}: ${point.turnsPerSec} turns/s, p50 ${Math.round(point.latency.p50)} ms, p95 ${Math.round(point.latency.p95)} ms, CPU/turn runners ${point.perTurn.runners} ms, workers ${point.perTurn.workers} ms, nats ${point.natsNodePerTurn.join("/")} ms${point.failed ? `, ${point.failed} failed` : ""}`,
  );
  return point;
}

/** Runs `body` against NATS of `shape`'s nodes and a client connection, then stops everything it started. */
export async function withDeployment<T>(
  { natsNodes: nodes, eventStreams }: SeriesShape,
  slices: CpuSlices | null,
  plan: ScalePlan,
  bridge: boolean,
  body: (machines: Machines, nc: NatsConnection) => Promise<T>,
): Promise<T> {
  // `ip netns exec` execs nats-server in place: the node's pid is the server's, for its slice and its CPU time.
  const nats = await startNats(nodes, slices, plan.natsQuota, bridge, seriesName({ natsNodes: nodes, eventStreams }));
  try {
    const machines = new Machines(nats, nodes === 1 ? 1 : 3, eventStreams);
    const nc = await connectBus(busOptions("client", { servers: nats.urls.join(","), name: "bench-scale-client" }));
    try {
      return await body(machines, nc);
    } finally {
      await nc.close();
      await machines.stop();
    }
  } finally {
    await nats.stop();
  }
}

/** A series' short name, for cgroups and session ids: `5n5s`. */
const seriesName = (shape: SeriesShape) => `${shape.natsNodes}n${shape.eventStreams}s`;

/** One series: k = 1, 2, 4 slices against its NATS nodes and event streams, the slices added between points. */
async function runSeries(
  series: SeriesShape,
  slices: CpuSlices | null,
  bench: BenchPlan,
  plan: ScalePlan,
  bridge: boolean,
  tag: string,
): Promise<ScaleSeries> {
  const name = seriesName(series);
  const points = await withDeployment(series, slices, plan, bridge, async (machines, nc) => {
    const measured: ScalePoint[] = [];
    let made = 0;
    for (const k of plan.slices) {
      while (made < k) {
        made++;
        const slice = slices?.make(`slice-${name}-${made}`, plan.quota) ?? null;
        await machines.add(String(made), 1, 2, slice);
      }
      const shape = { ...series, slices: k, runners: k, workers: 2 * k };
      measured.push(await measure(machines, nc, bench, plan, shape, `${tag}-${name}-k${k}`));
    }
    return measured;
  });
  return { ...series, replicas: series.natsNodes === 1 ? 1 : 3, points };
}

/** Unsliced on the whole machine, a three-node cluster, S = 3: 1 runner × 2 workers, then 3 runners × 2 workers. */
async function runUnsliced(bench: BenchPlan, plan: ScalePlan, tag: string): Promise<ScalePoint[]> {
  const points: ScalePoint[] = [];
  const unsliced = { natsNodes: 3, eventStreams: UNSLICED_EVENT_STREAMS };
  for (const runners of [1, 3]) {
    points.push(
      await withDeployment(unsliced, null, plan, false, async (machines, nc) => {
        await machines.add(`u${runners}`, runners, 2, null);
        const shape = { ...unsliced, slices: 0, runners, workers: 2 };
        return measure(machines, nc, bench, plan, shape, `${tag}-u${runners}`);
      }),
    );
  }
  return points;
}

const describeSupport = (support: CgroupSupport) =>
  support.kind === "none" ? `unavailable (${support.reason}): every point ran unsliced` : support.kind;

/** Runs the whole phase: each series of the plan, the unsliced pair, the join (those of BENCH_SCALE_PHASES); removes its cgroups at the end. */
export async function runScaleSlices(bench: BenchPlan, tag: string): Promise<ScaleRun> {
  const plan = scalePlan();
  // spawnConclave adds an exit listener per child: up to 4 slices of 3 processes, and their restarts.
  process.setMaxListeners(Math.max(process.getMaxListeners(), 64));
  const startedAt = performance.now();
  const support = cgroupSupport();
  if (support.kind === "none") progress(`cgroups unavailable (${support.reason}): running unsliced`);
  progress(
    `scale: slices of ${plan.quota} core (NATS nodes ${plan.natsQuota} core), cgroups ${support.kind}; ${plan.turnsPerSlice} turns at ${plan.sessionsPerSlice} sessions per slice${plan.smoke ? " (smoke: BENCH_SCALE_TURNS below the default, or only some BENCH_SCALE_PHASES)" : ""}`,
  );
  const netns = await netnsSupport();
  if (!netns.available) progress(`network namespaces unavailable (${netns.reason}): NATS on loopback`);
  const slices = support.kind === "none" ? null : new CpuSlices(support);
  const series: ScaleSeries[] = [];
  let unsliced: ScalePoint[] = [];
  let join: JoinResult | undefined;
  try {
    if (plan.phases.includes("series"))
      for (const shape of plan.series)
        series.push(await runSeries(shape, slices, bench, plan, netns.available && shape.natsNodes > 1, tag));
    if (plan.phases.includes("unsliced")) unsliced = await runUnsliced(bench, plan, tag);
    if (plan.phases.includes("join")) {
      progress("scale: join, 2 runners added to 1 under load (three NATS nodes, unsliced)");
      join = await runJoin(bench, plan, tag);
    }
  } finally {
    slices?.remove();
  }
  return {
    plan,
    environment: describeEnvironment(),
    cgroups: describeSupport(support),
    network: netns.available
      ? "each NATS node of the 3- and 5-node sliced series in a network namespace of its own, reached over a bridge; runners and workers in the host's namespace; one NATS node and the unsliced points on loopback"
      : `loopback (network namespaces unavailable: ${netns.reason})`,
    series,
    unsliced,
    ...(join ? { join } : {}),
    durationS: Math.round((performance.now() - startedAt) / 1000),
  };
}
