import { type DurabilityPlan, durabilityPlan } from "./durabilityPlan.ts";

/**
 * How long and how hard the bench runs. `BENCH_QUICK=1` shrinks every phase
 * (for trying the bench out; its numbers are noisier and it says so in the report).
 */
export interface BenchPlan {
  quick: boolean;
  /** Concurrent sessions of the throughput runs. */
  levels: number[];
  /** Turns before anything is measured (JIT, connections, stream and bucket creation). */
  warmupTurns: number;
  /** The same for the in-process pipelines (they only need the JIT warm). */
  inProcessWarmupTurns: number;
  /** Unmeasured turns at the start of each level (its sessions' first turns). */
  levelWarmupMs: number;
  /** Measured time per level. */
  levelMs: number;
  /** Turns traced on the wire (c = 1) to count the turn's sequential hops. */
  traceTurns: number;
  /** CPU profile window of the runner and workers (at the highest level). */
  profileMs: number;
  /** New sessions per step of the idle-session memory measurement (two steps). */
  idleSessionsPerStep: number;
  /** "A busy day": overload, idle sessions and takeovers (bench/busyDay.ts). */
  busyDay: BusyDayPlan;
  /** "Under load" (issue 42): the burst, the soak and the takeover under load (bench/underLoad.ts). */
  underLoad: UnderLoadPlan;
  /** The durability section (issue 37): one long session's storage and the takeovers (bench/durability.ts). */
  durability: DurabilityPlan;
  /** The user messages, round-robin: each runs all nine stages (two waves, the council speaks). */
  texts: string[];
}

/** How big and how long the busy-day phases are. Sizes can be set from the environment to try them small. */
export interface BusyDayPlan {
  /** Sessions of the overload phase (`BENCH_BUSY_SESSIONS`, default 1000), against `baselineSessions` (100). */
  sessions: number;
  baselineSessions: number;
  /** Measured time of the unloaded (c=1), baseline and overload levels. */
  unloadedMs: number;
  baselineMs: number;
  overloadMs: number;
  /** Idle sessions at each step (`BENCH_IDLE_SESSIONS` = the last, default 10 000; the first is a tenth of it). */
  idleSteps: number[];
  /** Sessions created at once while opening the idle ones. */
  idleConcurrency: number;
  /** The runner's idle-session TTL for the idle phase (its eviction), and how long each idle reading samples. */
  idleTtlMs: number;
  idleSampleMs: number;
  /** Runners killed mid-turn (`BENCH_KILLS`, default 10). */
  kills: number;
}

/** A whole number above 0 from `env[name]`, else `fallback` when unset; anything else throws in one line. */
export function wholeFromEnv(name: string, fallback: number, env: NodeJS.ProcessEnv = process.env): number {
  const text = env[name];
  if (text === undefined || text === "") return fallback;
  const value = Number(text);
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be a whole number above 0, not ${text}`);
  return value;
}

const positive = (raw: string | undefined, fallback: number): number => {
  const value = Number(raw);
  return Number.isInteger(value) && value > 0 ? value : fallback;
};

/** How big the under-load phases are (issue 42's sizes by default; smaller from the environment to try them). */
export interface UnderLoadPlan {
  /** Sessions submitting one turn each at once (`BENCH_BURST_SESSIONS`, default 2000), in `burstRuns` runs (`BENCH_BURST_RUNS`, 3). */
  burstSessions: number;
  burstRuns: number;
  /** How long a burst's submitter waits for its turn, `busy` retries included, before it counts it as neither. */
  patienceMs: number;
  /** Turns of the soak (`BENCH_SOAK_TURNS`, default 20 000) from `soakClients` concurrent sessions (`BENCH_SOAK_CLIENTS`, 50). */
  soakTurns: number;
  soakClients: number;
  /** How often the soak samples consumers, nats-server's RSS and the lapses. */
  soakSampleMs: number;
  /** Runners killed in the takeover under load (`BENCH_LOAD_KILLS`, default 5), each with `inFlight` turns in flight (100). */
  kills: number;
  inFlight: number;
}

export function underLoadPlan(quick: boolean, env = process.env): UnderLoadPlan {
  return {
    burstSessions: positive(env.BENCH_BURST_SESSIONS, 2_000),
    burstRuns: positive(env.BENCH_BURST_RUNS, 3),
    patienceMs: 60_000,
    soakTurns: positive(env.BENCH_SOAK_TURNS, 20_000),
    soakClients: positive(env.BENCH_SOAK_CLIENTS, 50),
    soakSampleMs: quick ? 2_000 : 5_000,
    kills: positive(env.BENCH_LOAD_KILLS, quick ? 2 : 5),
    inFlight: positive(env.BENCH_LOAD_IN_FLIGHT, 100),
  };
}

export function busyDayPlan(quick: boolean, env = process.env): BusyDayPlan {
  const idle = positive(env.BENCH_IDLE_SESSIONS, 10_000);
  return {
    sessions: positive(env.BENCH_BUSY_SESSIONS, 1_000),
    baselineSessions: 100,
    unloadedMs: quick ? 3_000 : 8_000,
    baselineMs: quick ? 4_000 : 15_000,
    overloadMs: quick ? 6_000 : 30_000,
    idleSteps: [Math.max(1, Math.round(idle / 10)), idle],
    idleConcurrency: 200,
    idleTtlMs: 5_000,
    idleSampleMs: quick ? 4_000 : 6_000,
    kills: positive(env.BENCH_KILLS, 10),
  };
}

export function benchPlan(env = process.env): BenchPlan {
  const quick = env.BENCH_QUICK === "1";
  return {
    busyDay: busyDayPlan(quick, env),
    underLoad: underLoadPlan(quick, env),
    durability: durabilityPlan(quick, env),
    quick,
    levels: [1, 10, 100],
    warmupTurns: quick ? 100 : 400,
    inProcessWarmupTurns: quick ? 100 : 200,
    levelWarmupMs: quick ? 500 : 1_500,
    levelMs: quick ? 2_000 : 6_000,
    traceTurns: quick ? 10 : 40,
    profileMs: quick ? 1_500 : 4_000,
    idleSessionsPerStep: quick ? 100 : 250,
    texts: [
      "I'm stressed about my deadline",
      "I'm stressed about my deadline and my manager keeps adding work",
      "I feel overwhelmed and anxious, everything is too much. Can you help me?",
    ],
  };
}
