import type { BurstRun } from "./burst.ts";
import { round } from "./stats.ts";
import { judge, notMeasured, type Target } from "./targets.ts";
import type { UnderLoadRun } from "./underLoad.ts";

const OLDER_RUN = "not in this run (made before the bench measured it)";

/** Issue 42's goals ("Under load"). */
export const UNDER_LOAD_GOALS = {
  /** Burst: submissions that neither end Complete nor are refused `busy` within their patience; poisoned turns; lapses. */
  burstUnsettled: 0,
  burstPoisoned: 0,
  burstLapses: 0,
  /** Soak: live consumers per active client, nats-server's RSS (MiB) and CPU per turn (ms), lapses. */
  soakConsumersPerClient: 2,
  soakNatsRssMiB: 512,
  soakNatsCpuPerTurnMs: 3,
  soakLapses: 0,
  /** Soak (issue 37): turns degraded, stored bytes per turn (8 KB), runner and worker RSS growth once warm (%). */
  soakDegraded: 0,
  soakStoredBytesPerTurn: 8_000,
  soakRssGrowthPercent: 10,
  /** Takeover with two workers per step: model calls made again; p95 kill → TURN_RESUMED with turns in flight. */
  takeoverRepeatedCalls: 0,
  takeoverP95Ms: 2_000,
} as const;

type Phases = Omit<UnderLoadRun, "targets">;

const failedWith = (phase: object) => ("error" in phase ? `the phase failed: ${String(phase.error)}` : null);

/** The under-load targets (bench/underLoad.ts), judged on its phases; a phase that failed leaves its targets "not measured". */
export const underLoadTargets = (run: Phases): Target[] => [
  ...burstTargets(run.burst),
  ...soakTargets(run.soak),
  ...takeoverTargets(run.takeover),
];

function burstTargets(burst: Phases["burst"]): Target[] {
  const g = UNDER_LOAD_GOALS;
  const burstWhy = failedWith(burst);
  const b = "runs" in burst ? burst : null;
  const sum = (pick: (r: BurstRun) => number) => (b ? b.runs.reduce((n, r) => n + pick(r), 0) : Number.NaN);
  const burstAt = b
    ? `${b.runs[0]?.sessions ?? 0} sessions at once in LLM mode (${b.modelLatencyMs} ms model), ${b.runs.length} run${b.runs.length === 1 ? "" : "s"}`
    : "The burst";
  const perRun = b?.runs
    .map(
      (r, i) =>
        `run ${i + 1}: ${r.completed} Complete, ${r.refusedBusy} refused busy, ${r.failed} failed, ${r.timedOut} not in time, ${r.poisoned} poisoned, ${r.lapses} lapses`,
    )
    .join("; ");
  const target = (id: string, statement: string, value: number, goal: number, unit: string) =>
    burstWhy || !b
      ? notMeasured(id, statement, goal, "≤", unit, burstWhy ?? OLDER_RUN)
      : judge(id, statement, value, goal, "≤", unit, perRun);
  return [
    target(
      "load-burst-unsettled",
      `${burstAt}: submissions that neither end Complete nor are refused busy within their patience (${(b?.patienceMs ?? 60_000) / 1000} s)`,
      sum((r) => r.failed + r.timedOut),
      g.burstUnsettled,
      " turns",
    ),
    target(
      "load-burst-poisoned",
      `${burstAt}: turns poisoned (dead letters under conclave.dlq.poison, or failed as poison)`,
      sum((r) => r.poisoned),
      g.burstPoisoned,
      " turns",
    ),
    target(
      "load-burst-lapses",
      `${burstAt}: runner lease lapses ("liveness lease lapsed" in its log)`,
      sum((r) => r.lapses),
      g.burstLapses,
      " lapses",
    ),
  ];
}

function soakTargets(soak: Phases["soak"]): Target[] {
  const g = UNDER_LOAD_GOALS;
  const soakWhy = failedWith(soak);
  const s = "samples" in soak ? soak : null;
  const soakAt = s ? `A soak of ${s.turns} turns from ${s.clients} sessions` : "The soak";
  const target = (id: string, statement: string, value: number, goal: number, unit: string, detail: string) =>
    soakWhy || !s || !Number.isFinite(value)
      ? notMeasured(id, statement, goal, "≤", unit, soakWhy ?? OLDER_RUN)
      : judge(id, statement, value, goal, "≤", unit, detail);
  return [
    target(
      "load-soak-consumers",
      `${soakAt}: live consumers per active client (beyond the runtime's own, at most over the samples)`,
      s?.maxConsumersPerClient ?? Number.NaN,
      g.soakConsumersPerClient,
      " consumers",
      s
        ? `at most ${s.maxConsumers} consumers, ${s.baselineConsumers} before the first turn, ${s.consumersAfter} after the last client closed`
        : "",
    ),
    target(
      "load-soak-rss",
      `${soakAt}: nats-server RSS`,
      s?.maxNatsRssMiB ?? Number.NaN,
      g.soakNatsRssMiB,
      " MiB",
      s ? `the largest of ${s.samples.length} samples` : "",
    ),
    target(
      "load-soak-cpu",
      `${soakAt}: nats-server CPU per turn`,
      s?.natsCpuPerTurnMs ?? Number.NaN,
      g.soakNatsCpuPerTurnMs,
      " ms",
      s ? `${s.natsCpuMs} ms over ${round(s.elapsedMs / 1000, 0)} s, from /proc` : "",
    ),
    target(
      "load-soak-lapses",
      `${soakAt}: runner lease lapses`,
      s?.lapses ?? Number.NaN,
      g.soakLapses,
      " lapses",
      s ? `${s.completed} Complete, ${s.notComplete} not` : "",
    ),
    target(
      "load-soak-degraded",
      `${soakAt}: turns degraded (ended other than Complete, or failed)`,
      s?.notComplete ?? Number.NaN,
      g.soakDegraded,
      " turns",
      s ? `${s.completed} Complete, ${s.busyAnswers} busy answers (sent again)` : "",
    ),
    target(
      "load-soak-bytes",
      `${soakAt}: stored bytes per turn (growth of every stream's bytes, event log, KV and memory, ÷ the turns)`,
      s?.storedBytesPerTurn ?? Number.NaN,
      g.soakStoredBytesPerTurn,
      " B",
      "",
    ),
    target(
      "load-soak-rss-flat",
      `${soakAt}: runner and worker RSS growth once warm (median RSS of the last quarter's samples against the second quarter's)`,
      s?.rssGrowth ? Math.max(...s.rssGrowth.map((r) => r.growth * 100).filter(Number.isFinite)) : Number.NaN,
      g.soakRssGrowthPercent,
      "%",
      s?.rssGrowth?.map((r) => `${r.process} ${r.warmMiB} → ${r.endMiB} MiB`).join(", ") ?? "",
    ),
  ];
}

function takeoverTargets(takeover: Phases["takeover"]): Target[] {
  const g = UNDER_LOAD_GOALS;
  const takeoverWhy = failedWith(takeover);
  const t = "kills" in takeover ? takeover : null;
  const repeatsStatement =
    "Takeover with two workers per step: model calls made again (identical requests answered twice) over every kill";
  const p95Statement = `Takeover with ${t?.inFlight ?? 100} turns in flight: p95 from the kill to a taken-over turn's TURN_RESUMED`;
  const why = takeoverWhy ?? (t && t.kills.length === 0 ? "no runner could be killed" : OLDER_RUN);
  if (!t || t.kills.length === 0)
    return [
      notMeasured("load-takeover-repeats", repeatsStatement, g.takeoverRepeatedCalls, "≤", " calls", why),
      notMeasured("load-takeover-p95", p95Statement, g.takeoverP95Ms, "≤", " ms", why),
    ];
  return [
    judge(
      "load-takeover-repeats",
      repeatsStatement,
      t.repeatedModelCalls,
      g.takeoverRepeatedCalls,
      "≤",
      " calls",
      `${t.kills.length} kills, ${t.kills.reduce((n, k) => n + k.modelCalls, 0)} model calls; with no kill, the same load repeated ${t.control.repeatedModelCalls} of ${t.control.modelCalls}`,
    ),
    t.resumed
      ? judge(
          "load-takeover-p95",
          p95Statement,
          t.resumed.p95,
          g.takeoverP95Ms,
          "≤",
          " ms",
          `${t.resumed.n} turns taken over in ${t.kills.length} kills (${t.kills.map((k) => k.inFlightAtKill).join(", ")} in flight); p50 ${round(t.resumed.p50, 0)} ms; to TURN_COMPLETED p95 ${round(t.completed?.p95 ?? Number.NaN, 0)} ms`,
        )
      : notMeasured(
          "load-takeover-p95",
          p95Statement,
          g.takeoverP95Ms,
          "≤",
          " ms",
          "no turn showed TURN_RESUMED after a kill",
        ),
  ];
}
