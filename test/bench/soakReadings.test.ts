/**
 * The pure parts of the soak's issue-37 readings: RSS growth once warm, and the targets judged on
 * degraded turns, stored bytes per turn and that growth. The soak itself is not run here.
 */
import { describe, expect, it } from "vitest";
import { rssGrowthAfterWarmUp, type SoakRun, type SoakSample } from "../../bench/soak.ts";
import { underLoadTargets } from "../../bench/underLoadTargets.ts";

/** 20 samples over 1000 turns; each process's RSS at the n-th sample is `rss(name, n)`. */
const samples = (rss: (process: string, n: number) => number): SoakSample[] =>
  Array.from({ length: 20 }, (_, i) => ({
    atS: i * 5,
    turns: (i + 1) * 50,
    consumers: 10,
    openClients: 5,
    runningSessions: 5,
    natsRssMiB: 100,
    rssMiB: { runner: rss("runner", i), "worker[memory]": rss("worker[memory]", i) },
    lapses: 0,
  }));

const soak = (over: Partial<SoakRun>): SoakRun => ({
  turns: 1000,
  clients: 5,
  completed: 1000,
  notComplete: 0,
  busyAnswers: 0,
  elapsedMs: 100_000,
  baselineConsumers: 7,
  maxConsumersPerClient: 1,
  maxConsumers: 12,
  consumersAfter: 7,
  maxNatsRssMiB: 100,
  natsCpuMs: 1000,
  natsCpuPerTurnMs: 1,
  storedBytesPerTurn: 5_000,
  rssGrowth: [],
  lapses: 0,
  samples: [],
  errors: [],
  ...over,
});

const judged = (run: SoakRun) =>
  Object.fromEntries(
    underLoadTargets({ burst: { error: "not run" }, soak: run, takeover: { error: "not run" } }).map((t) => [t.id, t]),
  );

describe("RSS growth once warm", () => {
  it("ignores warm-up and a single GC spike, and finds steady growth", () => {
    // The runner climbs during warm-up, then holds at 200 MiB but for one spike late on; the
    // memory worker grows 1 MiB a sample all along.
    const growth = rssGrowthAfterWarmUp(
      samples((process, n) => (process === "runner" ? (n < 5 ? 100 + n * 20 : n === 17 ? 400 : 200) : 100 + n)),
      1000,
    );
    expect(growth.map((g) => g.process)).toEqual(["worker[memory]", "runner"]);
    expect(growth[1]).toMatchObject({ process: "runner", warmMiB: 200, endMiB: 200, growth: 0 });
    // Second quarter: samples 4..9 (turns 250..500), median 107; last quarter: 14..19, median 117.
    expect(growth[0]).toMatchObject({ warmMiB: 107, endMiB: 117 });
    expect(growth[0]!.growth).toBeCloseTo(117 / 107 - 1, 3);
  });

  it("puts a process it could not read in both halves last, and the target leaves it out", () => {
    const read = samples((process, n) => (process === "runner" && n >= 10 ? Number.NaN : 100 + n));
    const growth = rssGrowthAfterWarmUp(read, 1000);
    expect(growth.map((g) => g.process)).toEqual(["worker[memory]", "runner"]);
    expect(growth[1]!.growth).toBeNaN();
    const t = judged(soak({ rssGrowth: growth }));
    expect(t["load-soak-rss-flat"]?.measured).toBeCloseTo((117 / 107 - 1) * 100, 1);
  });
});

describe("the soak's issue-37 targets", () => {
  it("are met by a soak that degrades nothing, stores little and stays flat", () => {
    const t = judged(soak({ rssGrowth: [{ process: "runner", warmMiB: 200, endMiB: 210, growth: 0.05 }] }));
    expect(t["load-soak-degraded"]?.verdict).toMatch(/^met/);
    expect(t["load-soak-bytes"]?.verdict).toMatch(/^met/);
    expect(t["load-soak-rss-flat"]?.verdict).toMatch(/^met/);
  });

  it("are missed by degraded turns, 24 KB a turn and a growing worker, with the figures", () => {
    const t = judged(
      soak({
        notComplete: 3,
        storedBytesPerTurn: 24_000,
        rssGrowth: [
          { process: "worker[memory]", warmMiB: 100, endMiB: 130, growth: 0.3 },
          { process: "runner", warmMiB: 200, endMiB: 200, growth: 0 },
        ],
      }),
    );
    expect(t["load-soak-degraded"]?.verdict).toMatch(/missed/);
    expect(t["load-soak-bytes"]).toMatchObject({ measured: 24_000, goal: 8_000 });
    expect(t["load-soak-bytes"]?.verdict).toMatch(/missed by 3x/);
    expect(t["load-soak-rss-flat"]?.measured).toBe(30);
    expect(t["load-soak-rss-flat"]?.detail).toContain("worker[memory] 100 → 130 MiB");
  });

  it("say not measured for a run made before the bench read them", () => {
    const older = soak({});
    delete (older as Partial<SoakRun>).storedBytesPerTurn;
    delete (older as Partial<SoakRun>).rssGrowth;
    const t = judged(older);
    expect(t["load-soak-bytes"]?.verdict).toMatch(/not measured/);
    expect(t["load-soak-rss-flat"]?.verdict).toMatch(/not measured/);
  });
});
