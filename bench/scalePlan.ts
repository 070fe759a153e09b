/**
 * The plan of `npm run bench -- --scale` (bench/scaleSlices.ts) from its BENCH_SCALE_* variables:
 * how many turns and sessions per slice, the quotas, and the series (NATS nodes, event streams).
 */

import { MAX_EVENT_STREAMS } from "../src/eventlog/eventStreams.ts";
import { coresFromEnv } from "./cgroups.ts";
import { wholeFromEnv } from "./plan.ts";

/** How much `--scale` runs; every figure but the node counts is per slice, so load per slice stays equal. */
export interface ScalePlan {
  /** Measured turns per slice per point (BENCH_SCALE_TURNS). Default 100. */
  turnsPerSlice: number;
  /** Concurrent sessions per slice, closed loop (BENCH_SCALE_SESSIONS). Default 4. */
  sessionsPerSlice: number;
  /** CPU quota of each runner-and-workers slice, in cores (BENCH_SCALE_QUOTA). Default 0.5. */
  quota: number;
  /** CPU quota of each NATS node's slice, in cores (BENCH_SCALE_NATS_QUOTA). Default 1. */
  natsQuota: number;
  /** The slice counts of each series. */
  slices: number[];
  /** The series, each NATS nodes and event streams (BENCH_SCALE_SERIES, e.g. "1:1,3:1,5:1,5:5"). */
  series: SeriesShape[];
  /** The phases to run, in this order (BENCH_SCALE_PHASES, e.g. "join"); absent in runs made before it. */
  phases: ScalePhase[];
  /** Fewer turns than the default, only some phases, or profiled: a smoke run, whose numbers are not written to docs/. */
  smoke: boolean;
}

/** A phase of `--scale`: the sliced series, the unsliced pair, a runner joining mid-load. */
export type ScalePhase = "series" | "unsliced" | "join";

/** Every phase, in the order they run; BENCH_SCALE_PHASES picks some of them. */
export const SCALE_PHASES: readonly ScalePhase[] = ["series", "unsliced", "join"];

/** BENCH_SCALE_PHASES, a comma-separated list of {@link SCALE_PHASES}; an unknown or repeated one throws in one line. */
export function scalePhases(text: string): ScalePhase[] {
  const names = text.split(",").map((name) => name.trim());
  const unknown = names.filter((name) => !(SCALE_PHASES as readonly string[]).includes(name));
  const twice = names.filter((name, index) => names.indexOf(name) !== index);
  if (unknown.length > 0 || twice.length > 0)
    throw new Error(
      `BENCH_SCALE_PHASES must list some of ${SCALE_PHASES.join(",")} (${unknown.length > 0 ? `unknown: ${unknown.map((n) => `"${n}"`).join(", ")}` : `${twice[0]} twice`}), not ${text}`,
    );
  return SCALE_PHASES.filter((phase) => names.includes(phase));
}

export const DEFAULT_SCALE_TURNS = 100;

/** What a series runs on: its NATS node count and its event log's stream count S. */
export interface SeriesShape {
  natsNodes: number;
  eventStreams: number;
}

/** The series when BENCH_SCALE_SERIES is unset: S = 1 on 1, 3 and 5 nodes, then S = 5 on 5 nodes. */
export const DEFAULT_SCALE_SERIES = "1:1,3:1,5:1,5:5";

/** The event streams of the unsliced pair: the runner's default (`DEFAULT_EVENT_STREAMS`). */
export const UNSLICED_EVENT_STREAMS = 3;

/** BENCH_SCALE_SERIES, a list of `nodes:streams`; a bad or repeated pair throws in one line. */
export function scaleSeries(text: string): SeriesShape[] {
  const bad = (why: string) =>
    new Error(`BENCH_SCALE_SERIES must list nodes:streams pairs, e.g. ${DEFAULT_SCALE_SERIES} (${why}), not ${text}`);
  const seen = new Set<string>();
  return text.split(",").map((item) => {
    const match = /^\s*(\d+):(\d+)\s*$/.exec(item);
    const natsNodes = Number(match?.[1]);
    const eventStreams = Number(match?.[2]);
    if (!match || natsNodes < 1 || eventStreams < 1 || eventStreams > MAX_EVENT_STREAMS)
      throw bad(`nodes above 0, streams from 1 to ${MAX_EVENT_STREAMS}`);
    if (seen.has(`${natsNodes}:${eventStreams}`)) throw bad(`${natsNodes}:${eventStreams} twice`);
    seen.add(`${natsNodes}:${eventStreams}`);
    return { natsNodes, eventStreams };
  });
}

/** The plan from BENCH_SCALE_* (see {@link ScalePlan}); a bad value throws in one line. */
export function scalePlan(env: NodeJS.ProcessEnv = process.env): ScalePlan {
  const whole = (name: string, fallback: number) => wholeFromEnv(name, fallback, env);
  if (env.BENCH_SCALE_NODES)
    throw new Error(`BENCH_SCALE_NODES is gone: set BENCH_SCALE_SERIES, nodes:streams, e.g. ${DEFAULT_SCALE_SERIES}`);
  const series = scaleSeries(env.BENCH_SCALE_SERIES || DEFAULT_SCALE_SERIES);
  const turnsPerSlice = whole("BENCH_SCALE_TURNS", DEFAULT_SCALE_TURNS);
  const phases = scalePhases(env.BENCH_SCALE_PHASES || SCALE_PHASES.join(","));
  return {
    turnsPerSlice,
    sessionsPerSlice: whole("BENCH_SCALE_SESSIONS", 4),
    quota: coresFromEnv("BENCH_SCALE_QUOTA", 0.5, env),
    natsQuota: coresFromEnv("BENCH_SCALE_NATS_QUOTA", 1, env),
    slices: [1, 2, 4],
    series,
    phases,
    // A profiled run (BENCH_SCALE_PROFILE=1) pays the profiler's CPU: its figures are not the targets'.
    smoke:
      turnsPerSlice < DEFAULT_SCALE_TURNS || phases.length < SCALE_PHASES.length || env.BENCH_SCALE_PROFILE === "1",
  };
}
