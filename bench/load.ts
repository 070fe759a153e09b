import { ticker } from "./progress.ts";
import { round, type Summary, summarize } from "./stats.ts";

/** What one turn reports back to the driver. */
export interface TurnSample {
  /** Submit → completion as seen by the caller. */
  latencyMs: number;
  /** The runtime's own measure of the turn (Conclave: TURN_COMPLETED.total_time_ms), when it has one. */
  runtimeMs?: number;
  /** Events the turn produced (as observed). */
  events: number;
  /** False when the turn ended other than fully complete (warnings, failure). */
  ok: boolean;
}

/** One closed-loop run: `sessions` sessions, each sending its turns back to back. */
export interface LoadResult {
  sessions: number;
  turns: number;
  failed: number;
  elapsedMs: number;
  turnsPerSec: number;
  events: number;
  eventsPerSec: number;
  latency: Summary;
  runtime: Summary | null;
}

export interface LoadOptions {
  sessions: number;
  /** Stop starting turns after this long (turns in flight finish and count). */
  durationMs?: number;
  /** Or: exactly this many turns per session. */
  turnsPerSession?: number;
  /** Runs turn number `turn` (0-based, per session) of session number `session`. */
  runTurn: (session: number, turn: number) => Promise<TurnSample>;
  /** Told once a second how many turns have completed so far. */
  onTick?: (completed: number, elapsedMs: number) => void;
}

/**
 * A closed-loop load: every session runs its turns one after the other (the
 * next is sent when the previous completed), all sessions at once. A turn that
 * throws counts as failed and its session goes on.
 */
export async function closedLoop(options: LoadOptions): Promise<LoadResult> {
  if (options.durationMs === undefined && options.turnsPerSession === undefined)
    throw new Error("closedLoop: give durationMs or turnsPerSession");
  const samples: TurnSample[] = [];
  let failed = 0;
  const started = performance.now();
  const deadline = options.durationMs === undefined ? Number.POSITIVE_INFINITY : started + options.durationMs;
  const limit = options.turnsPerSession ?? Number.POSITIVE_INFINITY;
  const stopTicking = ticker(() => options.onTick?.(samples.length, performance.now() - started), 2_000);
  const session = async (index: number) => {
    for (let turn = 0; turn < limit && performance.now() < deadline; turn++) {
      try {
        const sample = await options.runTurn(index, turn);
        samples.push(sample);
        if (!sample.ok) failed++;
      } catch (error) {
        failed++;
        if (failed <= 3) process.stderr.write(`  turn failed: ${error instanceof Error ? error.message : error}\n`);
      }
    }
  };
  try {
    await Promise.all(Array.from({ length: options.sessions }, (_, index) => session(index)));
  } finally {
    stopTicking();
  }
  const elapsedMs = performance.now() - started;
  const events = samples.reduce((sum, sample) => sum + sample.events, 0);
  const runtimes = samples.flatMap((sample) => (sample.runtimeMs === undefined ? [] : [sample.runtimeMs]));
  return {
    sessions: options.sessions,
    turns: samples.length,
    failed,
    elapsedMs: round(elapsedMs, 1),
    turnsPerSec: round((samples.length / elapsedMs) * 1000, 1),
    events,
    eventsPerSec: round((events / elapsedMs) * 1000, 0),
    latency: summarize(samples.map((sample) => sample.latencyMs)),
    runtime: runtimes.length > 0 ? summarize(runtimes) : null,
  };
}

/** Above this much CPU used by other processes (cores), a measured level is taken again. */
export const DISTURBED_CORES = 0.3;

/**
 * Runs a measurement, and once more when other work on the machine disturbed
 * it; keeps the quieter of the two (the report shows how quiet it was).
 */
export async function quietest<T extends { backgroundCores: number }>(
  measure: () => Promise<T>,
  onRetry?: (first: T) => void,
): Promise<T> {
  const first = await measure();
  if (first.backgroundCores <= DISTURBED_CORES) return first;
  onRetry?.(first);
  const second = await measure();
  return second.backgroundCores < first.backgroundCores ? second : first;
}
