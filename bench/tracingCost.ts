import type { NatsConnection } from "@nats-io/nats-core";
import { busOptions, connectBus } from "../src/bus/connection.ts";
import { type BenchCluster, startBenchCluster } from "./cluster.ts";
import { conclaveTurn } from "./conclave.ts";
import { closedLoop } from "./load.ts";
import { startOtlpSink } from "./otlpSink.ts";
import type { BenchPlan } from "./plan.ts";
import { cpuTimeMs, machineBusyMs } from "./procfs.ts";
import { progress } from "./progress.ts";
import { round, type Summary, summarize } from "./stats.ts";
import { type TracingOffMicro, timeTracingOff } from "./tracingMicro.ts";

/** Tracing off or on, one deployment each. */
export type TracingSide = "off" | "on";

/** One side's c=1 turns over all its blocks. */
export interface TracingSideResult {
  turns: number;
  failed: number;
  /** Submit → TURN_COMPLETED seen by the client, pooled over the side's blocks. */
  latency: Summary;
  /** CPU of the deployment's processes and its nats-server (not the client) per turn, ms. */
  cpuPerTurnMs: number;
}

/** What tracing costs (the report's "Tracing cost" section; absent from older runs). */
export interface TracingCostRun {
  sessions: number;
  /** The sides in the order their blocks ran (off, on, on, off…: drift cancels). */
  order: TracingSide[];
  blockMs: number;
  off: TracingSideResult;
  on: TracingSideResult;
  /** p50 with tracing on ÷ p50 with it off. */
  p50Ratio: number;
  /** Turns the traced deployment ran while its spans were counted, and the spans that reached the sink meanwhile. */
  countedTurns: number;
  spansReceived: number;
  /** 0 means the deployment did not trace (the variables were not honoured): the on/off ratio then says nothing. */
  spansPerTurn: number;
  /** The spans received over the measured blocks, by `service.name`. */
  spansByService: Record<string, number>;
  exportRequests: number;
  /** Export requests whose body was not OTLP JSON (their spans are not counted). */
  unreadableExports: number;
  /** The tracing variables the traced deployment ran with. */
  env: Record<string, string>;
  /** Tracing off, timed in process: the entry points' cost, or why it could not be timed. */
  offMicro: TracingOffMicro | { error: string };
  /** Most CPU used meanwhile by processes outside the bench during a block, in cores. */
  backgroundCores: number;
}

/** The variables the tracing contract reads; the untraced deployment runs without any of them. */
const TRACING_VARIABLES = [
  "OTEL_TRACES_EXPORTER",
  "OTEL_EXPORTER_OTLP_ENDPOINT",
  "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
  "OTEL_EXPORTER_OTLP_PROTOCOL",
  "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
  "OTEL_SERVICE_NAME",
  "OTEL_SDK_DISABLED",
];

/** `conclave-bench-runner`, `conclave-bench-worker-emotion-social-planning`. */
const serviceName = (process: string) =>
  `conclave-bench-${process
    .replace(/[^A-Za-z0-9]+/g, "-")
    .replace(/^-|-$/g, "")
    .toLowerCase()}`;

/** Off, on, on, off (repeated): each side gets the same share of the early and late machine. */
export function alternatingOrder(blocksPerSide: number): TracingSide[] {
  const order: TracingSide[] = [];
  for (let i = 0; i < blocksPerSide; i++) order.push(i % 2 === 0 ? "off" : "on", i % 2 === 0 ? "on" : "off");
  return order;
}

interface Deployment {
  side: TracingSide;
  cluster: BenchCluster;
  nc: NatsConnection;
  /** Turns submitted to it so far. */
  submitted: number;
}

async function deploy(side: TracingSide, env: NodeJS.ProcessEnv): Promise<Deployment> {
  const cluster = await startBenchCluster({
    env,
    ...(side === "on" ? { processEnv: (name: string) => ({ OTEL_SERVICE_NAME: serviceName(name) }) } : {}),
  });
  const nc = await connectBus(busOptions("client", { servers: cluster.url, name: `bench-tracing-${side}` }));
  return { side, cluster, nc, submitted: 0 };
}

/** Closed-loop turns on one deployment, counting what it was sent. */
function load(deployment: Deployment, plan: BenchPlan, prefix: string, sessions: number, durationMs: number) {
  return closedLoop({
    sessions,
    durationMs,
    runTurn: (session, turn) => {
      deployment.submitted++;
      return conclaveTurn(deployment.nc, `${prefix}-${session}`, plan.texts[turn % plan.texts.length]!);
    },
  });
}

/** The same warm-up as the main deployment's (JIT, connections, streams), on both. */
async function warm(deployment: Deployment, plan: BenchPlan, tag: string): Promise<void> {
  for (const [sessions, perSession] of [
    [10, Math.ceil(plan.warmupTurns / 20)],
    [100, Math.ceil(plan.warmupTurns / 200)],
  ] as const) {
    await closedLoop({
      sessions,
      turnsPerSession: perSession,
      runTurn: (session, turn) => {
        deployment.submitted++;
        return conclaveTurn(
          deployment.nc,
          `${tag}-${deployment.side}-warm${sessions}-${session}`,
          plan.texts[turn % plan.texts.length]!,
        );
      },
    });
  }
}

/**
 * Tracing cost at c=1: two deployments of the same code, one tracing (OTLP/HTTP
 * JSON to a sink the bench runs, which counts the spans) and one not, measured
 * in alternating blocks (off, on, on, off) so machine drift cancels; the same
 * warm-up and measured time as the c=1 level. Then tracing off, timed in
 * process ({@link timeTracingOff}), scaled by the spans a traced turn makes.
 */
export async function runTracingCost(plan: BenchPlan, tag: string): Promise<TracingCostRun> {
  // Two deployments at once: each process the bench spawns adds an exit listener (to kill it should the bench die).
  process.setMaxListeners(Math.max(process.getMaxListeners(), 32));
  const sink = await startOtlpSink();
  const untraced = Object.fromEntries(TRACING_VARIABLES.map((name) => [name, undefined]));
  const tracingEnv: Record<string, string> = {
    OTEL_TRACES_EXPORTER: "otlp",
    OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
    OTEL_EXPORTER_OTLP_ENDPOINT: sink.endpoint,
    // Spans leave every half second and none is dropped at the warm-up's c=100, so the count per turn is exact;
    // the export work per span is the SDK's default either way.
    OTEL_BSP_SCHEDULE_DELAY: "500",
    OTEL_BSP_MAX_QUEUE_SIZE: "65536",
  };
  const deployments: Deployment[] = [];
  try {
    progress("tracing cost: starting two deployments, one tracing to the bench's OTLP/HTTP sink, one not");
    deployments.push(await deploy("off", untraced), await deploy("on", { ...untraced, ...tracingEnv }));
    const [off, on] = deployments as [Deployment, Deployment];
    for (const deployment of deployments) {
      progress(`tracing cost: warm-up of the ${deployment.side === "on" ? "traced" : "untraced"} deployment`);
      await warm(deployment, plan, tag);
    }
    const blocksPerSide = 2;
    const blockMs = Math.round(plan.levelMs / blocksPerSide);
    const order = alternatingOrder(blocksPerSide);
    for (const deployment of deployments)
      await load(deployment, plan, `${tag}-tr-${deployment.side}`, 1, plan.levelWarmupMs);
    // Spans of the warm-ups are left out of the count: it covers only the measured c=1 blocks.
    await sink.settled(1_500, 10_000);
    const spansBefore = sink.spans();
    const byServiceBefore = sink.spansByService();
    const turnsBefore = on.submitted;
    const latencies: Record<TracingSide, number[]> = { off: [], on: [] };
    const failed: Record<TracingSide, number> = { off: 0, on: 0 };
    const cpuMs: Record<TracingSide, number> = { off: 0, on: 0 };
    let backgroundCores = 0;
    for (const [index, side] of order.entries()) {
      const deployment = side === "off" ? off : on;
      const pids = deployment.cluster.pids();
      const cpuBefore = pids.map(({ pid }) => cpuTimeMs(pid));
      const machineBefore = machineBusyMs();
      const ownBefore = cpuTimeMs(process.pid);
      const result = await closedLoop({
        sessions: 1,
        durationMs: blockMs,
        runTurn: async (session, turn) => {
          deployment.submitted++;
          const sample = await conclaveTurn(
            deployment.nc,
            `${tag}-tr-${side}-${session}`,
            plan.texts[turn % plan.texts.length]!,
          );
          latencies[side].push(sample.latencyMs);
          return sample;
        },
      });
      const used = pids.reduce((sum, { pid }, i) => sum + cpuTimeMs(pid) - cpuBefore[i]!, 0);
      const own = cpuTimeMs(process.pid) - ownBefore;
      cpuMs[side] += used;
      failed[side] += result.failed;
      backgroundCores = Math.max(
        backgroundCores,
        round(Math.max(0, machineBusyMs() - machineBefore - used - own) / result.elapsedMs, 2),
      );
      progress(
        `tracing cost: block ${index + 1} of ${order.length} (tracing ${side}): ${result.turns} turns, p50 ${result.latency.p50} ms`,
      );
    }
    const countedTurns = on.submitted - turnsBefore;
    // Stopping the traced deployment makes every process flush its spans on exit.
    await Promise.all(deployments.splice(0).map((d) => stopDeployment(d)));
    await sink.settled(1_000, 10_000);
    const spansReceived = sink.spans() - spansBefore;
    const side = (s: TracingSide): TracingSideResult => ({
      turns: latencies[s].length,
      failed: failed[s],
      latency: summarize(latencies[s]),
      cpuPerTurnMs: round(cpuMs[s] / Math.max(1, latencies[s].length), 3),
    });
    const offResult = side("off");
    const onResult = side("on");
    const spansPerTurn = round(spansReceived / Math.max(1, countedTurns), 2);
    progress(
      `tracing cost: p50 off ${offResult.latency.p50} ms, on ${onResult.latency.p50} ms; ${spansReceived} spans for ${countedTurns} traced turns (${spansPerTurn} per turn)${spansReceived === 0 ? ": the traced deployment sent no span, tracing was not on" : ""}`,
    );
    const offMicro = await timeTracingOff().catch((error: unknown) => ({
      error: error instanceof Error ? error.message : String(error),
    }));
    if ("error" in offMicro) progress(`tracing cost: tracing off not timed: ${offMicro.error}`);
    else progress(`tracing cost: tracing off costs ${offMicro.nsPerSpan} ns per span (every entry point)`);
    const requests = sink.requests();
    return {
      sessions: 1,
      order,
      blockMs,
      off: offResult,
      on: onResult,
      p50Ratio: round(onResult.latency.p50 / offResult.latency.p50, 3),
      countedTurns,
      spansReceived,
      spansPerTurn,
      spansByService: Object.fromEntries(
        Object.entries(sink.spansByService()).map(([service, spans]) => [
          service,
          spans - (byServiceBefore[service] ?? 0),
        ]),
      ),
      exportRequests: requests.total,
      unreadableExports: requests.unreadable,
      env: { ...tracingEnv, OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:<port>", OTEL_SERVICE_NAME: "per process" },
      offMicro,
      backgroundCores,
    };
  } finally {
    await Promise.all(deployments.map((d) => stopDeployment(d)));
    await sink.stop();
  }
}

async function stopDeployment(deployment: Deployment): Promise<void> {
  await deployment.nc.close();
  await deployment.cluster.stop();
}

/** The traced turn's share of its cost when off: µs per turn (spans per turn × ns per span) ÷ the untraced p50. */
export function tracingOffShare(run: TracingCostRun): { usPerTurn: number; shareOfP50: number } | null {
  if ("error" in run.offMicro || run.spansPerTurn <= 0) return null;
  const usPerTurn = (run.spansPerTurn * run.offMicro.nsPerSpan) / 1_000;
  return { usPerTurn: round(usPerTurn, 2), shareOfP50: usPerTurn / 1_000 / run.off.latency.p50 };
}
