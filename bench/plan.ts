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
  /** The user messages, round-robin: each runs all nine stages (two waves, the council speaks). */
  texts: string[];
}

export function benchPlan(env = process.env): BenchPlan {
  const quick = env.BENCH_QUICK === "1";
  return {
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
