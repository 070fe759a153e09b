/**
 * The pure parts of `npm run bench -- --scale` (issue 36): quota arithmetic, the plan from the
 * environment, the targets' ratios and the section's rendering. The bench itself is not run here.
 */
import { describe, expect, it } from "vitest";
import { coresFromEnv, cpuMaxLine, quotaFor, throttledMs } from "../../bench/cgroups.ts";
import type { CpuPerTurn } from "../../bench/clusterScaling.ts";
import {
  ONE_STREAM,
  oversubscribed,
  renderScale,
  SCALE_SECTION_END,
  SCALE_SECTION_START,
  scaleTargets,
  targetLines,
} from "../../bench/scaleReport.ts";
import { type ScalePoint, type ScaleRun, scalePlan } from "../../bench/scaleSlices.ts";

const perTurn: CpuPerTurn = { runners: 4, busiestRunner: 4, workers: 6, nats: 3, busiestNats: 3, client: 2 };

const point = (slices: number, turnsPerSec: number, p50: number, runners = Math.max(1, slices)): ScalePoint => ({
  natsNodes: 1,
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
  plan: scalePlan({ BENCH_SCALE_TURNS: "20" }),
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
  series: [{ natsNodes: 1, replicas: 1, points: [point(1, 10, 100), point(2, 18, 110), point(4, 30, 140)] }],
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

  it("plans a smoke run below the default turns, and the node series from BENCH_SCALE_NODES", () => {
    const plan = scalePlan({ BENCH_SCALE_TURNS: "20", BENCH_SCALE_NODES: "1,3" });
    expect(plan).toMatchObject({ turnsPerSlice: 20, smoke: true, natsNodes: [1, 3], slices: [1, 2, 4], quota: 0.5 });
    expect(scalePlan({}).smoke).toBe(false);
    expect(() => scalePlan({ BENCH_SCALE_NODES: "1,x" })).toThrow(/BENCH_SCALE_NODES/);
  });
});

describe("scaling targets", () => {
  it("judges k slices against 0.85·k, p50 growth at k = 4, and 3 runners against 1", () => {
    const targets = scaleTargets(run());
    const byId = Object.fromEntries(targets.map((t) => [t.id, t]));
    expect(byId["scale-throughput-k2-n1"]).toMatchObject({ measured: 1.8, goal: 1.7, met: true });
    expect(byId["scale-throughput-k4-n1"]).toMatchObject({ measured: 3, goal: 3.4, met: false });
    expect(byId["scale-p50-k4-n1"]).toMatchObject({ measured: 1.4, goal: 1.25, met: false });
    expect(byId["scale-unsliced-3-runners"]).toMatchObject({ measured: 0.95, goal: 0.9, met: true });
    expect(byId["scale-nats-streams"]?.notMeasured).toBe(ONE_STREAM);
    expect(targetLines(targets)).toEqual([
      "PASS scale-throughput-k2-n1: 1.8x (goal ≥ 1.7x)",
      "MISS scale-throughput-k4-n1: 3x (goal ≥ 3.4x)",
      "MISS scale-p50-k4-n1: 1.4x (goal ≤ 1.25x)",
      "PASS scale-unsliced-3-runners: 0.95x (goal ≥ 0.9x)",
      `not measured scale-nats-streams: ${ONE_STREAM}`,
    ]);
  });
});

describe("quotas above the machine", () => {
  it("names the points whose slices and NATS nodes ask for more cores than there are", () => {
    // 2 cores, slices of 0.5 core; NATS used 3 ms a turn: at k = 4, 2 cores + 30 turns/s × 3 ms.
    expect(oversubscribed(run())).toEqual(["1 NATS node, 4 slices: 2.09 cores"]);
    expect(renderScale(run())).toContain("**Quotas above the machine** (1 NATS node, 4 slices: 2.09 cores,");
  });
});

describe("the Scaling on CPU slices section", () => {
  it("sits between its markers with the targets, one table per series and the streams line", () => {
    const section = renderScale(run());
    expect(section.startsWith(SCALE_SECTION_START)).toBe(true);
    expect(section.endsWith(SCALE_SECTION_END)).toBe(true);
    expect(section).toContain("## Scaling on CPU slices");
    expect(section).toContain("### 1 NATS node (R1)");
    expect(section).toContain("**Smoke run**");
    expect(section).toContain("unsliced, 3 runners × 2 workers");
    expect(section).toContain(`Not measured: ${ONE_STREAM}.`);
    expect(section).toContain("| 3x | ≥ 3.4x | 0.88x | **missed** by 1.13x |");
  });
});
