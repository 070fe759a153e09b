/**
 * The pure parts of `npm run bench -- --scale` (issue 36): quota arithmetic, the plan from the
 * environment, the targets' ratios and the section's rendering. The bench itself is not run here.
 */
import { describe, expect, it } from "vitest";
import { coresFromEnv, cpuMaxLine, quotaFor, throttledMs } from "../../bench/cgroups.ts";
import type { CpuPerTurn } from "../../bench/clusterScaling.ts";
import type { JoinResult } from "../../bench/scaleJoin.ts";
import { joinTargets } from "../../bench/scaleJoinReport.ts";
import { scalePhases, scalePlan } from "../../bench/scalePlan.ts";
import {
  oversubscribed,
  renderScale,
  SCALE_SECTION_END,
  SCALE_SECTION_START,
  scaleTargets,
  streamsTarget,
  targetLines,
} from "../../bench/scaleReport.ts";
import type { ScalePoint, ScaleRun, ScaleSeries } from "../../bench/scaleSlices.ts";

const perTurn: CpuPerTurn = { runners: 4, busiestRunner: 4, workers: 6, nats: 3, busiestNats: 3, client: 2 };

const point = (slices: number, turnsPerSec: number, p50: number, runners = Math.max(1, slices)): ScalePoint => ({
  natsNodes: 1,
  eventStreams: 1,
  slices,
  runners,
  workers: 2 * Math.max(1, slices),
  sessions: 4,
  turns: 20,
  failed: 0,
  elapsedMs: 1000,
  turnsPerSec,
  latency: { n: 20, mean: p50, min: p50, p50, p95: p50 * 2, p99: p50 * 2, max: p50 * 3 },
  cpu: [],
  perTurn,
  natsNodePerTurn: [3],
  throttledMs: 120,
  cores: 1.5,
  backgroundCores: 0.1,
});

const run = (): ScaleRun => ({
  plan: scalePlan({ BENCH_SCALE_TURNS: "20", BENCH_SCALE_PHASES: "series,unsliced" }),
  environment: {
    date: "2026-11-29T00:00:00Z",
    cpuModel: "test cpu",
    cores: 2,
    memoryGiB: 4,
    kernel: "6",
    versions: {},
    commit: "abc1234",
  },
  cgroups: "v1",
  network: "loopback",
  series: [
    { natsNodes: 1, eventStreams: 1, replicas: 1, points: [point(1, 10, 100), point(2, 18, 110), point(4, 30, 140)] },
  ],
  unsliced: [point(0, 20, 50, 1), point(0, 19, 55, 3)],
  durationS: 60,
});

describe("CPU slice quotas", () => {
  it("turns cores into a quota per period, for cpu.max and cpu.cfs_quota_us", () => {
    expect(quotaFor(0.5)).toEqual({ quotaUs: 50_000, periodUs: 100_000 });
    expect(cpuMaxLine(quotaFor(1.5))).toBe("150000 100000");
    expect(() => quotaFor(0)).toThrow(/more than 0 cores/);
    expect(() => quotaFor(0.005)).toThrow(/1 ms per period/);
  });

  it("reads cores from the environment and refuses a bad value in one line", () => {
    expect(coresFromEnv("Q", 0.5, {})).toBe(0.5);
    expect(coresFromEnv("Q", 0.5, { Q: "0.25" })).toBe(0.25);
    expect(() => coresFromEnv("Q", 0.5, { Q: "half" })).toThrow("Q must be a number of cores above 0, not half");
  });

  it("reads the throttled time of v1 (ns) and v2 (µs) cpu.stat", () => {
    expect(throttledMs("nr_periods 10\nnr_throttled 2\nthrottled_time 5000000\n", false)).toBe(5);
    expect(throttledMs("usage_usec 9\nthrottled_usec 7000\n", true)).toBe(7);
  });

  it("plans a smoke run below the default turns, and the series of nodes and streams from BENCH_SCALE_SERIES", () => {
    const plan = scalePlan({ BENCH_SCALE_TURNS: "20", BENCH_SCALE_SERIES: "1:1,3:2" });
    expect(plan).toMatchObject({
      turnsPerSlice: 20,
      smoke: true,
      series: [
        { natsNodes: 1, eventStreams: 1 },
        { natsNodes: 3, eventStreams: 2 },
      ],
      slices: [1, 2, 4],
      quota: 0.5,
    });
    expect(scalePlan({}).smoke).toBe(false);
    expect(scalePlan({}).series.map((s) => `${s.natsNodes}:${s.eventStreams}`)).toEqual(["1:1", "3:1", "5:1", "5:5"]);
  });

  it("runs every phase by default, and only those BENCH_SCALE_PHASES names, in their order", () => {
    expect(scalePlan({}).phases).toEqual(["series", "unsliced", "join"]);
    const joinOnly = scalePlan({ BENCH_SCALE_PHASES: "join" });
    expect(joinOnly.phases).toEqual(["join"]);
    // Only some phases: a smoke, so docs/benchmarks-scale.json is not overwritten by a partial run.
    expect(joinOnly.smoke).toBe(true);
    expect(scalePhases(" join, series ")).toEqual(["series", "join"]);
  });

  it("refuses an unknown or repeated BENCH_SCALE_PHASES in one line", () => {
    expect(() => scalePlan({ BENCH_SCALE_PHASES: "join,joins" })).toThrow(
      /^BENCH_SCALE_PHASES must list some of series,unsliced,join \(unknown: "joins"\), not join,joins$/,
    );
    expect(() => scalePhases("join,join")).toThrow("(join twice), not join,join");
  });

  it("refuses a bad BENCH_SCALE_SERIES, and the old BENCH_SCALE_NODES, in one line", () => {
    for (const bad of ["1,3", "1:x", "0:1", "3:0", "5:17", "3:1,3:1"])
      expect(() => scalePlan({ BENCH_SCALE_SERIES: bad })).toThrow(
        new RegExp(`^BENCH_SCALE_SERIES must list nodes:streams pairs, e.g. 1:1,3:1,5:1,5:5 \\(.*\\), not ${bad}$`),
      );
    expect(() => scalePlan({ BENCH_SCALE_SERIES: "3:1,3:1" })).toThrow("(3:1 twice)");
    expect(() => scalePlan({ BENCH_SCALE_NODES: "1,3,5" })).toThrow(
      /^BENCH_SCALE_NODES is gone: set BENCH_SCALE_SERIES/,
    );
  });
});

describe("scaling targets", () => {
  it("judges k slices against 0.85·k, p50 growth at k = 4, and 3 runners against 1", () => {
    const targets = scaleTargets(run());
    const byId = Object.fromEntries(targets.map((t) => [t.id, t]));
    expect(byId["scale-throughput-k2-n1-s1"]).toMatchObject({ measured: 1.8, goal: 1.7, met: true });
    expect(byId["scale-throughput-k4-n1-s1"]).toMatchObject({ measured: 3, goal: 3.4, met: false });
    expect(byId["scale-p50-k4-n1-s1"]).toMatchObject({ measured: 1.4, goal: 1.25, met: false });
    expect(byId["scale-unsliced-3-runners"]).toMatchObject({ measured: 0.95, goal: 0.9, met: true });
    const missing = "no series of 5 NATS nodes with S ≥ 5 nor of 3 NATS nodes with S = 1 (BENCH_SCALE_SERIES)";
    expect(byId["scale-nats-streams"]?.notMeasured).toBe(missing);
    expect(targetLines(targets)).toEqual([
      "PASS scale-throughput-k2-n1-s1: 1.8x (goal ≥ 1.7x)",
      "MISS scale-throughput-k4-n1-s1: 3x (goal ≥ 3.4x)",
      "MISS scale-p50-k4-n1-s1: 1.4x (goal ≤ 1.25x)",
      "PASS scale-unsliced-3-runners: 0.95x (goal ≥ 0.9x)",
      `not measured scale-nats-streams: ${missing}`,
      "not measured scale-join-wait: the join phase did not run (BENCH_SCALE_PHASES)",
      "not measured scale-join-lost-twice: the join phase did not run (BENCH_SCALE_PHASES)",
    ]);
  });

  it("keeps the ids of series on the same nodes apart by their streams", () => {
    const ids = scaleTargets({
      plan: run().plan,
      series: [streamed(5, 1, [9]), streamed(5, 5, [9])],
      unsliced: [],
    }).map((t) => t.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toContain("scale-throughput-k4-n5-s1");
    expect(ids).toContain("scale-throughput-k4-n5-s5");
  });
});

/** A series of k = 1, 2, 4 on `nodes` nodes and `streams` streams; at k = 4 the nodes' CPU per turn is `atFour`. */
const streamed = (nodes: number, streams: number, atFour: number[], k4 = true): ScaleSeries => ({
  natsNodes: nodes,
  eventStreams: streams,
  replicas: 3,
  points: [point(1, 10, 100), point(2, 18, 110), ...(k4 ? [point(4, 30, 140)] : [])].map((p) => ({
    ...p,
    natsNodes: nodes,
    eventStreams: streams,
    natsNodePerTurn: p.slices === 4 ? atFour : p.natsNodePerTurn.map((ms) => ms * nodes),
  })),
});

describe("S = 1 against S ≥ 5 event streams", () => {
  it("meets the goal when 5 nodes' busiest node uses at most half the CPU per turn of 3 nodes' at k = 4", () => {
    const target = streamsTarget([streamed(3, 1, [4, 10, 4]), streamed(5, 5, [3, 4, 5, 4, 3])]);
    expect(target).toMatchObject({ id: "scale-nats-streams", measured: 0.5, goal: 0.5, met: true });
    expect(target.detail).toBe("5.00 ÷ 10.00 ms at 4 slices");
  });

  it("misses it above half, and falls back to the largest k both series have", () => {
    const target = streamsTarget([streamed(3, 1, [4, 10, 4]), streamed(5, 1, [1]), streamed(5, 8, [9], false)]);
    // No k = 4 on S = 8: k = 2, where the 5-node nodes use 3·5 = 15 ms and the 3-node ones 3·3 = 9 ms.
    expect(target).toMatchObject({ measured: 1.667, met: false });
    expect(target.detail).toBe("15.00 ÷ 9.00 ms at 2 slices");
  });

  it("is not measured, naming the series missing, when either is", () => {
    expect(streamsTarget([streamed(3, 1, [4]), streamed(5, 1, [2])]).notMeasured).toBe(
      "no series of 5 NATS nodes with S ≥ 5 (BENCH_SCALE_SERIES)",
    );
    expect(streamsTarget([streamed(1, 1, [4]), streamed(5, 5, [2])]).notMeasured).toBe(
      "no series of 3 NATS nodes with S = 1 (BENCH_SCALE_SERIES)",
    );
  });
});

describe("quotas above the machine", () => {
  it("names the points whose slices and NATS nodes ask for more cores than there are", () => {
    // 2 cores, slices of 0.5 core; NATS used 3 ms a turn: at k = 4, 2 cores + 30 turns/s × 3 ms.
    expect(oversubscribed(run())).toEqual(["1 NATS node, S = 1, 4 slices: 2.09 cores"]);
    expect(renderScale(run())).toContain("**Quotas above the machine** (1 NATS node, S = 1, 4 slices: 2.09 cores,");
  });
});

describe("the Scaling on CPU slices section", () => {
  it("sits between its markers with the targets, one table per series and the streams table", () => {
    const section = renderScale(run());
    expect(section.startsWith(SCALE_SECTION_START)).toBe(true);
    expect(section.endsWith(SCALE_SECTION_END)).toBe(true);
    expect(section).toContain("## Scaling on CPU slices");
    expect(section).toContain("### 1 NATS node (R1), S = 1 event stream");
    expect(section).toContain("### Unsliced on the whole machine (three NATS nodes, R3, S = 3 event streams)");
    expect(section).toContain("**Smoke run**");
    expect(section).toContain("unsliced, 3 runners × 2 workers");
    expect(section).toContain("| 1 NATS node, S = 1 | 4 | 3.00 | 30 |");
    expect(section).toContain("| 3x | ≥ 3.4x | 0.88x | **missed** by 1.13x |");
  });
});

const joined = (over: Partial<JoinResult> = {}): JoinResult => ({
  natsNodes: 3,
  eventStreams: 3,
  sessions: 4,
  runners: 1,
  added: 2,
  turnsBefore: 50,
  turnsAcross: 54,
  joinMs: 3200,
  p99BeforeMs: 400,
  longestAcrossMs: 1900,
  overBudget: 0,
  failed: 0,
  runTwice: 0,
  turns: [],
  ...over,
});

describe("a runner joins mid-load", () => {
  it("meets both targets when no turn across the join waits 2 s past the p99 before it, none lost or run twice", () => {
    const [wait, lost] = joinTargets({ plan: run().plan, join: joined() });
    expect(wait).toMatchObject({ id: "scale-join-wait", measured: 1500, goal: 2000, unit: " ms", met: true });
    expect(wait?.detail).toBe("1900.00 − 400.00 ms; 0 of 54 turns over");
    expect(lost).toMatchObject({ id: "scale-join-lost-twice", measured: 0, goal: 0, met: true });
  });

  it("misses them on a turn 2 s past the p99, and on a lost or run-twice turn", () => {
    const join = joined({ longestAcrossMs: 2600, overBudget: 1, failed: 1, runTwice: 2 });
    const [wait, lost] = joinTargets({ plan: run().plan, join });
    expect(wait).toMatchObject({ measured: 2200, met: false });
    expect(lost).toMatchObject({ measured: 3, met: false, detail: "1 lost, 2 run twice" });
    expect(targetLines([wait!, lost!])).toEqual([
      "MISS scale-join-wait: 2200 ms (goal ≤ 2000 ms)",
      "MISS scale-join-lost-twice: 3 turns (goal ≤ 0 turns)",
    ]);
  });

  it("is not measured when the phase did not run, or in a results file made before it", () => {
    const skipped = joinTargets({ plan: scalePlan({ BENCH_SCALE_PHASES: "series" }) });
    expect(skipped.map((t) => t.notMeasured)).toEqual([
      "the join phase did not run (BENCH_SCALE_PHASES)",
      "the join phase did not run (BENCH_SCALE_PHASES)",
    ]);
    expect(joinTargets({ plan: scalePlan({}) })[1]?.notMeasured).toBe("the join phase gave no result");
    const { phases: _, ...older } = run().plan;
    expect(joinTargets({ plan: older as ScaleRun["plan"] })[0]?.notMeasured).toBe(
      "not in this run (made before the bench measured it)",
    );
  });

  it("renders its table after the unsliced one", () => {
    const section = renderScale({ ...run(), join: joined() });
    expect(section).toContain("### A runner joins mid-load (three NATS nodes)");
    expect(section).toContain("| 50 | 400.00 | 3200 | 54 | 1900.00 | 0 | 0 | 0 |");
    expect(section.indexOf("### Unsliced")).toBeLessThan(section.indexOf("### A runner joins"));
    expect(renderScale(run())).not.toContain("### A runner joins");
    // A join-only run (BENCH_SCALE_PHASES=join) shows no empty series, unsliced or streams tables.
    const joinOnly = renderScale({ ...run(), series: [], unsliced: [], join: joined() });
    expect(joinOnly).not.toContain("### Unsliced");
    expect(joinOnly).not.toContain("### S = 1 against");
    expect(joinOnly.endsWith(`| 0 |\n\n${SCALE_SECTION_END}`)).toBe(true);
  });
});
