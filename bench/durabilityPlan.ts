import { wholeFromEnv } from "./plan.ts";

/**
 * How big the durability section is (issue 37): the turns of the one-session conversation whose
 * storage is read, the turns after which it is read, and the runners killed on each deployment.
 */
export interface DurabilityPlan {
  /** Turns of one session, on Conclave and on LangGraph.js + PostgresSaver (`BENCH_DURABILITY_TURNS`; 500, quick 50). */
  turns: number;
  /** The turns after which the stores are read: 10, then every fifth of `turns` (10, 100, 200 … 500). */
  checkpoints: number[];
  /** Runners SIGKILLed mid-turn on one server and on the three-node cluster (`BENCH_DURABILITY_KILLS`; 10, quick 3). */
  kills: number;
}

/** The first checkpoint: per-turn bytes are judged from here on (the session's first turns set up its keys). */
export const FIRST_CHECKPOINT = 10;

/** 10, then every fifth of `turns`, ascending and without repeats (e.g. 10, 100, 200, 300, 400, 500). */
export function checkpointsOf(turns: number): number[] {
  const fifths = [1, 2, 3, 4, 5].map((k) => Math.round((k * turns) / 5));
  return [...new Set([Math.min(FIRST_CHECKPOINT, turns), ...fifths])].filter((n) => n > 0).sort((a, b) => a - b);
}

export function durabilityPlan(quick: boolean, env: NodeJS.ProcessEnv = process.env): DurabilityPlan {
  const turns = wholeFromEnv("BENCH_DURABILITY_TURNS", quick ? 50 : 500, env);
  return {
    turns,
    checkpoints: checkpointsOf(turns),
    kills: wholeFromEnv("BENCH_DURABILITY_KILLS", quick ? 3 : 10, env),
  };
}
