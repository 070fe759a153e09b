import type { InProcessResult } from "./inprocess.ts";
import type { ConclaveRun } from "./runConclave.ts";
import { round } from "./stats.ts";

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
}

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

/** The bench's targets (the report's Targets section), judged on one scenario's numbers (same run, same machine). */
export function judgeTargets(run: ConclaveRun, inProcess: InProcessResult[]): Target[] {
  const targets: Target[] = [];
  const at = (levels: { sessions: number }[], sessions: number) => levels.find((l) => l.sessions === sessions);
  const conclave1 = at(run.levels, 1) as (typeof run.levels)[number] | undefined;
  const conclave100 = at(run.levels, 100) as (typeof run.levels)[number] | undefined;
  for (const pipeline of inProcess.filter((p) => p.name.startsWith("LangGraph"))) {
    const lg1 = pipeline.levels.find((l) => l.sessions === 1);
    const lg100 = pipeline.levels.find((l) => l.sessions === 100);
    if (conclave1 && lg1)
      targets.push(
        judge(
          `p50-vs-${pipeline.name}`,
          `Conclave's distributed turn has ≥ 5x lower p50 latency than ${pipeline.name} in-process (c=1; LangGraph p50 ÷ Conclave p50)`,
          lg1.latency.p50 / conclave1.latency.p50,
          5,
          "≥",
        ),
      );
    if (conclave100 && lg100)
      targets.push(
        judge(
          `throughput-vs-${pipeline.name}`,
          `Conclave's throughput at 100 concurrent sessions is ≥ 5x ${pipeline.name}'s (Conclave turns/s ÷ LangGraph turns/s)`,
          conclave100.turnsPerSec / lg100.turnsPerSec,
          5,
          "≥",
        ),
      );
  }
  const floor = floorModel(run);
  if (floor && conclave1) {
    targets.push(
      judge(
        "overhead-vs-floor",
        "Conclave's turn overhead is within 2x of the floor (client p50 at c=1 ÷ floor)",
        conclave1.latency.p50 / floor.clientFloorMs,
        2,
        "≤",
      ),
    );
  }
  return targets;
}
