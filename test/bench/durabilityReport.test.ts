/**
 * The pure parts of the bench's durability section (issue 37): the plan from the environment,
 * stores by kind, per-turn bytes and their flatness, the targets' ratios, tokens of repeated model
 * calls and the section's rendering. The bench itself is not run here.
 */
import { describe, expect, it } from "vitest";
import { checkpointsOf, durabilityPlan } from "../../bench/durabilityPlan.ts";
import {
  byStore,
  DURABILITY_MARKERS,
  type DurabilityRun,
  durabilityTargets,
  flatness,
  perTurnWindows,
  renderDurability,
  type StoreReading,
  storeOf,
} from "../../bench/durabilityReport.ts";
import { requestTokens, type TakeoverSeries, tokensRespent } from "../../bench/durabilityTakeover.ts";
import type { ChatRequestBody } from "../../test/helpers/openaiServer.ts";

/** A session whose stores grow by `perTurn(turn)` bytes a turn, read at `checkpoints`. */
const readings = (checkpoints: number[], perTurn: (turn: number) => number): StoreReading[] => {
  let events = 1_000;
  const out: StoreReading[] = [{ turn: 0, streams: { CONCLAVE_EVENTS_0: events, KV_conclave_sessions: 200 } }];
  for (let turn = 1; turn <= checkpoints.at(-1)!; turn++) {
    events += perTurn(turn);
    if (checkpoints.includes(turn))
      out.push({ turn, streams: { CONCLAVE_EVENTS_0: events, KV_conclave_sessions: 200, CONCLAVE_MEMORY: 10 * turn } });
  }
  return out;
};

const series = (deployment: TakeoverSeries["deployment"], resumed: number[], tokens = 0): TakeoverSeries => ({
  deployment,
  modelCallsPerTurn: 12,
  kills: resumed.map((ms) => ({
    resumedMs: ms,
    completedMs: ms + 500,
    status: "Complete",
    modelCalls: 12,
    repeatedModelCalls: tokens > 0 ? 1 : 0,
    tokensRespent: tokens,
  })),
  resumed: { n: resumed.length, mean: 0, min: 0, p50: Math.min(...resumed), p95: Math.max(...resumed), p99: 0, max: 0 },
  completed: null,
  repeatedModelCalls: tokens > 0 ? resumed.length : 0,
  tokensRespent: tokens * resumed.length,
});

const run = (postgresBytes: number, conclavePerTurn: (turn: number) => number = () => 3_000): DurabilityRun => {
  const plan = durabilityPlan(false, {});
  return {
    plan,
    conclave: { session: "s", failed: 0, elapsedMs: 9_000, readings: readings(plan.checkpoints, conclavePerTurn) },
    postgres: {
      version: "16",
      failed: 0,
      elapsedMs: 20_000,
      readings: plan.checkpoints.map((turn) => ({
        turn,
        streams: { checkpoints: postgresBytes, checkpoint_blobs: 0 },
      })),
    },
    takeover: {
      modelLatencyMs: 50,
      killAfter: "WAVE_COMPLETED",
      single: series("one server", [900, 1_200]),
      cluster: series("three nodes", [1_500, 2_600], 40),
    },
    durationS: 60,
  };
};

describe("the durability plan", () => {
  it("reads the stores after turn 10 and every fifth of the turns", () => {
    expect(checkpointsOf(500)).toEqual([10, 100, 200, 300, 400, 500]);
    expect(checkpointsOf(50)).toEqual([10, 20, 30, 40, 50]);
    expect(durabilityPlan(false, {})).toMatchObject({ turns: 500, kills: 10 });
    expect(durabilityPlan(true, {})).toMatchObject({ turns: 50, kills: 3 });
    expect(durabilityPlan(false, { BENCH_DURABILITY_TURNS: "100", BENCH_DURABILITY_KILLS: "2" })).toMatchObject({
      turns: 100,
      kills: 2,
    });
    expect(() => durabilityPlan(false, { BENCH_DURABILITY_TURNS: "ten" })).toThrow(/BENCH_DURABILITY_TURNS/);
  });
});

describe("bytes per turn", () => {
  it("groups streams by store", () => {
    expect(storeOf("CONCLAVE_EVENTS_3")).toBe("events");
    expect(storeOf("KV_conclave_memory_graph")).toBe("memory");
    expect(storeOf("CONCLAVE_MEMORY")).toBe("memory");
    expect(storeOf("CONCLAVE_TURNS")).toBe("wal");
    expect(storeOf("KV_conclave_turns")).toBe("kv");
    expect(storeOf("CONCLAVE_DEAD_LETTERS")).toBe("other");
    expect(
      byStore({ turn: 1, streams: { CONCLAVE_EVENTS_0: 5, KV_conclave_sessions: 2, CONCLAVE_MEMORY: 1 } }),
    ).toEqual({ events: 5, kv: 2, memory: 1, wal: 0, other: 0, total: 8 });
  });

  it("measures growth between checkpoints from turn 10, and its flatness", () => {
    const windows = perTurnWindows(readings([10, 100, 200], (turn) => (turn > 100 ? 1_100 : 1_000)));
    // Events grow 1000 then 1100 B a turn; memory 10 B a turn throughout.
    expect(windows).toEqual([
      { from: 10, to: 100, perTurn: 1_010 },
      { from: 100, to: 200, perTurn: 1_110 },
    ]);
    expect(flatness(windows)).toBeCloseTo(1_110 / 1_010, 3);
    expect(flatness([])).toBeNaN();
    expect(flatness([{ from: 10, to: 100, perTurn: 0 }])).toBe(Number.POSITIVE_INFINITY);
  });
});

describe("the durability targets", () => {
  it("judges flatness, storage against PostgresSaver and the takeovers, with their ratios", () => {
    const targets = durabilityTargets(run(100 * 1024 * 1024));
    const byId = Object.fromEntries(targets.map((t) => [t.id, t]));
    expect(Object.keys(byId)).toEqual([
      "durability-bytes-flat",
      "durability-storage-vs-postgressaver",
      "durability-takeover-p95-single",
      "durability-tokens-respent-single",
      "durability-takeover-p95-cluster",
      "durability-tokens-respent-cluster",
    ]);
    expect(byId["durability-bytes-flat"]).toMatchObject({ met: true, goal: 1.1 });
    const storage = byId["durability-storage-vs-postgressaver"]!;
    // 1000 + 500 × 3000 events, 200 of sessions, 5000 of memory, against 100 MiB.
    expect(storage.measured).toBeCloseTo((1_000 + 1_500_000 + 200 + 5_000) / (100 * 1024 * 1024), 3);
    expect(storage).toMatchObject({ met: true, goal: 0.1, direction: "≤" });
    expect(byId["durability-takeover-p95-single"]).toMatchObject({ met: true, measured: 1_200, unit: " ms" });
    expect(byId["durability-takeover-p95-cluster"]).toMatchObject({ met: false, measured: 2_600, shortfall: 1.3 });
    expect(byId["durability-tokens-respent-single"]).toMatchObject({ met: true, measured: 0 });
    expect(byId["durability-tokens-respent-cluster"]).toMatchObject({ met: false, measured: 80 });
  });

  it("prints a missed goal as missed, with its figure, and never lowers it", () => {
    const targets = durabilityTargets(run(1024 * 1024, (turn) => (turn > 300 ? 6_000 : 3_000)));
    const flat = targets.find((t) => t.id === "durability-bytes-flat")!;
    expect(flat).toMatchObject({ met: false, goal: 1.1 });
    expect(flat.measured).toBeCloseTo(6_010 / 3_010, 2);
    expect(flat.verdict).toMatch(/^missed by/);
    expect(targets.find((t) => t.id === "durability-storage-vs-postgressaver")).toMatchObject({
      met: false,
      goal: 0.1,
    });
  });

  it("says why a part could not be measured", () => {
    const failed = { ...run(1024), postgres: { error: "PostgreSQL not found" } };
    failed.takeover = { ...failed.takeover, cluster: { error: "no quorum" } };
    const targets = durabilityTargets(failed);
    expect(targets.find((t) => t.id === "durability-storage-vs-postgressaver")?.notMeasured).toMatch(
      /PostgreSQL not found/,
    );
    expect(targets.find((t) => t.id === "durability-takeover-p95-cluster")?.notMeasured).toMatch(/no quorum/);
  });

  it("misses the takeover target when a killed turn never resumed", () => {
    const missing = run(1024);
    const single = missing.takeover.single as TakeoverSeries;
    single.kills.push({ ...single.kills[0]!, resumedMs: null });
    expect(durabilityTargets(missing).find((t) => t.id === "durability-takeover-p95-single")).toMatchObject({
      met: false,
    });
  });
});

describe("tokens re-spent", () => {
  const agent = (text: string): ChatRequestBody => ({
    model: "m",
    messages: [
      { role: "system", content: "You are empathy.listener. Answer in JSON." },
      { role: "user", content: text },
    ],
    response_format: { type: "json_schema", json_schema: { name: "agent_output", schema: {} } },
  });

  it("counts the tokens of requests identical to an earlier one, prompt and reply", async () => {
    const once = await requestTokens(agent("I'm stressed"));
    expect(once).toBeGreaterThan(Math.ceil("You are empathy.listener. Answer in JSON.I'm stressed".length / 4));
    expect(await tokensRespent([agent("I'm stressed"), agent("other")])).toEqual({ calls: 0, tokens: 0 });
    expect(await tokensRespent([agent("I'm stressed"), agent("other"), agent("I'm stressed")])).toEqual({
      calls: 1,
      tokens: once,
    });
  });
});

describe("the durability section", () => {
  it("renders between its markers, the figures of every part", () => {
    const section = renderDurability(run(100 * 1024 * 1024), "header line");
    expect(section.startsWith(DURABILITY_MARKERS[0])).toBe(true);
    expect(section.endsWith(DURABILITY_MARKERS[1])).toBe(true);
    expect(section).toContain("## Durability (issue 37)");
    expect(section).toContain("header line");
    expect(section).toContain("| 10 → 100 |");
    expect(section).toContain("### Storage after 500 turns against LangGraph.js + PostgresSaver");
    expect(section).toContain("| three nodes (R3) | 2 |");
    expect(renderDurability(undefined)).toContain("Not in this run");
  });

  it("says which part could not run", () => {
    const failed: DurabilityRun = { ...run(1024), conclave: { error: "nats-server not found" } };
    expect(renderDurability(failed)).toContain("Could not run: nats-server not found");
  });
});
