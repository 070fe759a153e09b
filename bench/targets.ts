import { clusterCpuPerTurnMs } from "./conclave.ts";
import type { InProcessResult } from "./inprocess.ts";
import { POSTGRES_SAVER_PIPELINE, type PostgresSaverSetup } from "./postgresSaver.ts";
import type { ConclaveRun } from "./runConclave.ts";
import { round } from "./stats.ts";
import { type TracingCostRun, tracingOffShare } from "./tracingCost.ts";

/** The floor: sequential round trips × the measured round trip + persisting the turn's events. */
export interface FloorModel {
  rttMs: number;
  eventPersistMs: number;
  /** Client view: the submission's round trips, those before TURN_STARTED, and the turn's. */
  clientRtts: number;
  clientFloorMs: number;
  /** Runner view (TURN_STARTED → TURN_COMPLETED): the turn's round trips only. */
  runnerRtts: number;
  runnerFloorMs: number;
}

export function floorModel(run: ConclaveRun): FloorModel | null {
  if (!run.floor) return null;
  const rttMs = run.floor.requestReply.p50;
  const eventPersistMs = run.hops.eventAppends * run.floor.jsPublishPipelinedPerEventMs;
  const clientRtts = run.hops.submit.rtts + run.hops.startRtts + run.hops.turnRtts;
  const runnerRtts = run.hops.turnRtts;
  return {
    rttMs,
    eventPersistMs: round(eventPersistMs, 3),
    clientRtts,
    clientFloorMs: round(clientRtts * rttMs + eventPersistMs, 3),
    runnerRtts,
    runnerFloorMs: round(runnerRtts * rttMs + eventPersistMs, 3),
  };
}

export interface Target {
  id: string;
  statement: string;
  /** The measured value of the criterion (a ratio). */
  measured: number;
  goal: number;
  /** "≥" for ratios that must reach the goal, "≤" for ones that must stay under it. */
  direction: "≥" | "≤";
  met: boolean;
  /** Missed targets: by what factor (1 when met); for a goal of 0, the excess. */
  shortfall: number;
  /** How far from the goal, e.g. "missed by 4.2x (needs 5x, got 1.19x)". */
  verdict: string;
  /** The unit of `measured` and `goal` when not a ratio ("x"): " ms", " cores", " turns"… (absent in older runs). */
  unit?: string;
  /** The figures behind the measured value, e.g. "p50 180 ms at c=1000 ÷ 95 ms at c=1". */
  detail?: string;
  /** Why the target could not be measured in this run (then `measured` is NaN, null once in JSON, and `met` false). */
  notMeasured?: string;
}

/** A target this run could not measure, and why (e.g. no PostgreSQL on the machine). */
export const notMeasured = (
  id: string,
  statement: string,
  goal: number,
  direction: "≥" | "≤",
  unit: string,
  reason: string,
): Target => ({
  id,
  statement,
  measured: Number.NaN,
  goal,
  direction,
  met: false,
  shortfall: Number.NaN,
  verdict: `not measured: ${reason}`,
  ...(unit === "x" ? {} : { unit }),
  notMeasured: reason,
});

/**
 * Judges a measured value against its goal. A goal of 0 (e.g. "no degraded
 * turn") cannot be missed by a factor: its shortfall is the excess itself.
 */
export const judge = (
  id: string,
  statement: string,
  measured: number,
  goal: number,
  direction: "≥" | "≤",
  unit = "x",
  detail?: string,
): Target => {
  const met = direction === "≥" ? measured >= goal : measured <= goal;
  // How far from the goal, as a factor: needs 5x, got 0.5x → missed by 10x.
  const factor = goal === 0 ? measured : direction === "≥" ? goal / measured : measured / goal;
  const by = goal === 0 ? `${round(factor, 3)}${unit} over` : `${round(factor, 1)}x`;
  const verdict = met
    ? `met (${round(measured, 3)}${unit}, goal ${direction} ${goal}${unit})`
    : `missed by ${by} (${round(measured, 3)}${unit}, goal ${direction} ${goal}${unit})`;
  return {
    id,
    statement,
    measured: round(measured, 3),
    goal,
    direction,
    met,
    shortfall: round(met ? 1 : factor, 2),
    verdict,
    ...(unit === "x" ? {} : { unit }),
    ...(detail ? { detail } : {}),
  };
};

/** The goals of issue 24 ("The fast path"), all judged in the same run on the same machine. */
export const FAST_PATH_GOALS = {
  /** Conclave's p50 at c=1 at most this many times LangGraph.js's in memory (no checkpointer). */
  p50VsLangGraph: 1,
  /** …and at most this share of LangGraph.js + MemorySaver's. */
  p50VsMemorySaver: 1 / 3,
  /** …and within this factor of the floor (client view). */
  p50VsFloor: 1.5,
  /** Sequential round trips from submit to TURN_COMPLETED (the floor model's client view). */
  clientRoundTrips: 10,
  /** Turns/s at c=100 at least this many times the faster in-memory LangGraph.js variant's. */
  throughputVsInMemory: 2,
  /** CPU per turn at c=100, all Conclave processes and nats-server (client excluded), ms. */
  cpuPerTurnMs: 6,
  /** Against LangGraph.js + PostgresSaver: p50 at c=1 this many times lower… */
  p50VsPostgresSaver: 10,
  /** …and this many times the throughput at c=100. */
  throughputVsPostgresSaver: 7,
  /** Tracing off: the instrumentation's cost per turn at most this share of the untraced p50, in %. */
  tracingOffSharePct: 1,
  /** Tracing on: at most this much added to the p50 at c=1, in %. */
  tracingOnAddedPct: 10,
} as const;

/** The goals of issue 37 ("The cheap turn"), item 6: the durability section (judged in bench/durabilityReport.ts). */
export const DURABILITY_GOALS = {
  /** Bytes persisted per turn, largest ÷ smallest between checkpoints from turn 10 to the last: within 10%. */
  bytesPerTurnFlatness: 1.1,
  /** Conclave's storage after the session's turns ÷ LangGraph.js + PostgresSaver's tables after the same. */
  storageVsPostgresSaver: 0.1,
  /** SIGKILL of a runner mid-turn → TURN_RESUMED, p95, ms (one server and three nodes). */
  takeoverP95Ms: 2_000,
  /** Model tokens spent again on calls the log already recorded. */
  tokensRespent: 0,
} as const;

/** What the fast-path targets are judged on besides the main deployment and the in-process pipelines. */
export interface TargetInputs {
  /** The PostgreSQL behind LangGraph.js + PostgresSaver, or why there was none (absent in older runs). */
  postgresSaver?: PostgresSaverSetup;
  /** The tracing phase, or why it failed (absent in older runs). */
  tracing?: TracingCostRun | { error: string };
}

const OLDER_RUN = "not in this run (made before the bench measured it)";

/**
 * The fast-path targets (the report's Targets section, before the busy day's),
 * judged on one scenario's numbers (same run, same machine). A target whose
 * inputs are missing (no PostgreSQL, tracing not on, an older results file) is
 * "not measured", with the reason.
 */
export function judgeTargets(run: ConclaveRun, inProcess: InProcessResult[], inputs: TargetInputs = {}): Target[] {
  const g = FAST_PATH_GOALS;
  const targets: Target[] = [];
  const level = (levels: InProcessResult["levels"] | ConclaveRun["levels"], sessions: number) =>
    (levels as { sessions: number }[]).find((l) => l.sessions === sessions) as (typeof levels)[number] | undefined;
  const pipeline = (name: string) => inProcess.find((p) => p.name === name);
  const conclave1 = run.levels.find((l) => l.sessions === 1);
  const conclave100 = run.levels.find((l) => l.sessions === 100);
  const p50 = conclave1?.latency.p50;
  const ms = (value: number) => `${round(value, 2)} ms`;

  // Latency against the in-memory LangGraph.js variants.
  const latencyVs = (id: string, name: string, factor: number, statement: string) => {
    const theirs = pipeline(name)?.levels.find((l) => l.sessions === 1)?.latency.p50;
    if (p50 === undefined || theirs === undefined)
      return notMeasured(id, statement, Number.NaN, "≤", " ms", `no c=1 level of ${name} or of Conclave`);
    return judge(
      id,
      statement,
      p50,
      round(theirs * factor, 3),
      "≤",
      " ms",
      `Conclave ${ms(p50)}, ${name} ${ms(theirs)}${factor === 1 ? "" : ` × ${round(factor, 3)}`}; ${name} ÷ Conclave = ${round(theirs / p50, 2)}x`,
    );
  };
  targets.push(
    latencyVs(
      "p50-vs-langgraph",
      "LangGraph.js",
      g.p50VsLangGraph,
      "p50 at c=1 (client: submit → TURN_COMPLETED) at most LangGraph.js's in memory (no checkpointer)",
    ),
    latencyVs(
      "p50-vs-memorysaver",
      "LangGraph.js + MemorySaver",
      g.p50VsMemorySaver,
      "p50 at c=1 at most a third of LangGraph.js + MemorySaver's",
    ),
  );

  // Latency and round trips against the floor.
  const floor = floorModel(run);
  const floorStatement = "p50 at c=1 within 1.5x of the floor (client view: round trips × RTT + event persistence)";
  if (floor && p50 !== undefined)
    targets.push(
      judge(
        "p50-vs-floor",
        floorStatement,
        p50,
        round(floor.clientFloorMs * g.p50VsFloor, 3),
        "≤",
        " ms",
        `floor ${ms(floor.clientFloorMs)} (${floor.clientRtts} round trips × ${ms(floor.rttMs)} + ${ms(floor.eventPersistMs)}) × 1.5; p50 ÷ floor = ${round(p50 / floor.clientFloorMs, 2)}x`,
      ),
    );
  else targets.push(notMeasured("p50-vs-floor", floorStatement, Number.NaN, "≤", " ms", OLDER_RUN));
  const rttStatement =
    "Sequential round trips from submit to TURN_COMPLETED (submission and its nested ones, before TURN_STARTED, the turn's), counted on the wire";
  if (floor)
    targets.push(
      judge(
        "client-round-trips",
        rttStatement,
        floor.clientRtts,
        g.clientRoundTrips,
        "≤",
        " round trips",
        `submission ${run.hops.submit.rtts}, before TURN_STARTED ${run.hops.startRtts}, turn ${run.hops.turnRtts} (${run.hops.hops} hops)`,
      ),
    );
  else
    targets.push(notMeasured("client-round-trips", rttStatement, g.clientRoundTrips, "≤", " round trips", OLDER_RUN));

  // Throughput against the faster in-memory variant.
  const inMemory = ["LangGraph.js", "LangGraph.js + MemorySaver"]
    .map((name) => ({ name, level: level(pipeline(name)?.levels ?? [], 100) }))
    .filter((p) => p.level !== undefined)
    .sort((a, b) => b.level!.turnsPerSec - a.level!.turnsPerSec)[0];
  const throughputStatement = "Turns/s at c=100 at least 2x the faster in-memory LangGraph.js variant's";
  if (conclave100 && inMemory?.level)
    targets.push(
      judge(
        "throughput-vs-langgraph",
        throughputStatement,
        conclave100.turnsPerSec,
        round(inMemory.level.turnsPerSec * g.throughputVsInMemory, 1),
        "≥",
        " turns/s",
        `Conclave ${conclave100.turnsPerSec} turns/s, ${inMemory.name} ${inMemory.level.turnsPerSec} turns/s; ratio ${round(conclave100.turnsPerSec / inMemory.level.turnsPerSec, 2)}x`,
      ),
    );
  else
    targets.push(
      notMeasured(
        "throughput-vs-langgraph",
        throughputStatement,
        Number.NaN,
        "≥",
        " turns/s",
        "no c=100 level of Conclave or LangGraph.js",
      ),
    );

  // CPU per turn: the same figure as the CPU table's "all Conclave processes + nats-server" row.
  const cpuStatement = "CPU per turn at c=100, all Conclave processes + nats-server (client excluded), from /proc";
  if (conclave100)
    targets.push(
      judge(
        "cpu-per-turn",
        cpuStatement,
        clusterCpuPerTurnMs(conclave100),
        g.cpuPerTurnMs,
        "≤",
        " ms",
        run.levels.map((l) => `c=${l.sessions}: ${ms(clusterCpuPerTurnMs(l))}`).join(", "),
      ),
    );
  else targets.push(notMeasured("cpu-per-turn", cpuStatement, g.cpuPerTurnMs, "≤", " ms", "no c=100 level"));

  // Against LangGraph.js + PostgresSaver.
  const postgres = pipeline(POSTGRES_SAVER_PIPELINE);
  const pg1 = level(postgres?.levels ?? [], 1);
  const pg100 = level(postgres?.levels ?? [], 100);
  const noPostgres =
    inputs.postgresSaver?.reason ?? (inputs.postgresSaver ? "no level of LangGraph.js + PostgresSaver" : OLDER_RUN);
  const pgP50Statement = "p50 at c=1 at least 10x lower than LangGraph.js + PostgresSaver's (their p50 ÷ Conclave's)";
  targets.push(
    pg1 && p50 !== undefined
      ? judge(
          "p50-vs-postgressaver",
          pgP50Statement,
          pg1.latency.p50 / p50,
          g.p50VsPostgresSaver,
          "≥",
          "x",
          `LangGraph.js + PostgresSaver ${ms(pg1.latency.p50)}, Conclave ${ms(p50)}`,
        )
      : notMeasured("p50-vs-postgressaver", pgP50Statement, g.p50VsPostgresSaver, "≥", "x", noPostgres),
  );
  const pgThroughputStatement = "Turns/s at c=100 at least 7x LangGraph.js + PostgresSaver's";
  targets.push(
    pg100 && conclave100
      ? judge(
          "throughput-vs-postgressaver",
          pgThroughputStatement,
          conclave100.turnsPerSec / pg100.turnsPerSec,
          g.throughputVsPostgresSaver,
          "≥",
          "x",
          `Conclave ${conclave100.turnsPerSec} turns/s, LangGraph.js + PostgresSaver ${pg100.turnsPerSec} turns/s`,
        )
      : notMeasured(
          "throughput-vs-postgressaver",
          pgThroughputStatement,
          g.throughputVsPostgresSaver,
          "≥",
          "x",
          noPostgres,
        ),
  );

  targets.push(...tracingTargets(inputs.tracing));
  return targets;
}

/** Tracing off: no measurable cost (timed in process, scaled by the spans of a traced turn); on: < 10% on p50. */
export function tracingTargets(tracing: TargetInputs["tracing"]): Target[] {
  const g = FAST_PATH_GOALS;
  const offStatement =
    "Tracing off: the instrumentation's cost per turn (entry points timed in process × spans of a traced turn) under 1% of p50";
  const onStatement = "Tracing on (OTLP/HTTP to a local sink): under 10% added to p50 at c=1 (alternating blocks)";
  const off = (reason: string) => notMeasured("tracing-off", offStatement, g.tracingOffSharePct, "≤", "%", reason);
  const on = (reason: string) => notMeasured("tracing-on", onStatement, g.tracingOnAddedPct, "≤", "%", reason);
  if (!tracing) return [off(OLDER_RUN), on(OLDER_RUN)];
  if ("error" in tracing)
    return [off(`the tracing phase failed: ${tracing.error}`), on(`the tracing phase failed: ${tracing.error}`)];
  if (tracing.spansReceived <= 0) {
    const reason = "the traced deployment sent no span: tracing was not on";
    return [off(reason), on(reason)];
  }
  const share = tracingOffShare(tracing);
  const offTarget =
    share && !("error" in tracing.offMicro)
      ? judge(
          "tracing-off",
          offStatement,
          share.shareOfP50 * 100,
          g.tracingOffSharePct,
          "≤",
          "%",
          `${tracing.spansPerTurn} spans per turn × ${tracing.offMicro.nsPerSpan} ns = ${share.usPerTurn} µs per turn, untraced p50 ${round(tracing.off.latency.p50, 2)} ms`,
        )
      : off("error" in tracing.offMicro ? tracing.offMicro.error : "no span per turn to scale by");
  const onTarget = judge(
    "tracing-on",
    onStatement,
    (tracing.p50Ratio - 1) * 100,
    g.tracingOnAddedPct,
    "≤",
    "%",
    `p50 ${round(tracing.on.latency.p50, 2)} ms on vs ${round(tracing.off.latency.p50, 2)} ms off (${tracing.on.turns} and ${tracing.off.turns} turns); ${tracing.spansPerTurn} spans per turn`,
  );
  return [offTarget, onTarget];
}
