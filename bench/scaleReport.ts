/**
 * The "Scaling on CPU slices" section of docs/BENCHMARKS.md and its targets (issue 36), from
 * docs/benchmarks-scale.json (written by `npm run bench -- --scale`). The section sits between two
 * markers, so `--scale` replaces only its own section.
 */
import { existsSync, readFileSync } from "node:fs";
import { ms, spliceSection, table, targetsTable } from "./markdown.ts";
import { joinSection, joinTargets } from "./scaleJoinReport.ts";
import { UNSLICED_EVENT_STREAMS } from "./scalePlan.ts";
import type { ScalePoint, ScaleRun, ScaleSeries } from "./scaleSlices.ts";
import { round } from "./stats.ts";
import { judge, notMeasured, type Target } from "./targets.ts";

export const SCALE_SECTION_START = "<!-- scale-slices: written by npm run bench -- --scale -->";
export const SCALE_SECTION_END = "<!-- /scale-slices -->";

/** The goals of issue 36's scaling targets. */
export const SCALE_GOALS = {
  /** k slices give at least this × k times one slice's turns/s. */
  perSliceShare: 0.85,
  /** p50 at k = 4 at most this many times p50 at k = 1. */
  p50Growth: 1.25,
  /** Unsliced, 3 runners give at least this share of 1 runner's turns/s. */
  threeRunners: 0.9,
  /** On 5 nodes with S ≥ 5 streams, the busiest node's CPU per turn at most this share of 3 nodes, one stream. */
  busiestNode: 0.5,
};

const pointAt = (series: ScaleSeries, slices: number) => series.points.find((point) => point.slices === slices);

const nodesText = (nodes: number) => `${nodes} NATS node${nodes > 1 ? "s" : ""}`;
const streamsText = (streams: number) => `S = ${streams} event stream${streams > 1 ? "s" : ""}`;

/** A series' name: "5 NATS nodes (R3), S = 5 event streams". */
export const seriesLabel = (series: ScaleSeries) =>
  `${nodesText(series.natsNodes)} (R${series.replicas}), ${streamsText(series.eventStreams)}`;

/** The busiest NATS node's CPU per turn at a point, in ms. */
const busiestNode = (point: ScalePoint) => Math.max(...point.natsNodePerTurn);

const STREAMS_STATEMENT = `on 5 nodes with S ≥ 5 streams, the busiest node's CPU per turn ≤ ${SCALE_GOALS.busiestNode} × 3 nodes with one stream`;

/**
 * The streams target: the busiest NATS node's CPU per turn on 5 nodes with S ≥ 5 (the most streams
 * when several) ÷ the same on 3 nodes with S = 1, at k = 4 or the largest k both series have.
 */
export function streamsTarget(series: ScaleSeries[]): Target {
  const many = series
    .filter((s) => s.natsNodes === 5 && s.eventStreams >= 5)
    .sort((a, b) => b.eventStreams - a.eventStreams)[0];
  const one = series.find((s) => s.natsNodes === 3 && s.eventStreams === 1);
  const missing = [...(many ? [] : ["5 NATS nodes with S ≥ 5"]), ...(one ? [] : ["3 NATS nodes with S = 1"])];
  const unmeasured = (reason: string) =>
    notMeasured("scale-nats-streams", STREAMS_STATEMENT, SCALE_GOALS.busiestNode, "≤", "x", reason);
  if (!many || !one) return unmeasured(`no series of ${missing.join(" nor of ")} (BENCH_SCALE_SERIES)`);
  const shared = many.points.map((p) => p.slices).filter((k) => k > 0 && pointAt(one, k));
  const k = shared.includes(4) ? 4 : Math.max(...shared);
  const [a, b] = [pointAt(many, k), pointAt(one, k)];
  if (!a || !b) return unmeasured(`the series of ${seriesLabel(many)} and of ${seriesLabel(one)} share no slice count`);
  return judge(
    "scale-nats-streams",
    STREAMS_STATEMENT,
    busiestNode(a) / busiestNode(b),
    SCALE_GOALS.busiestNode,
    "≤",
    "x",
    `${ms(busiestNode(a))} ÷ ${ms(busiestNode(b))} ms at ${k} slice${k > 1 ? "s" : ""}`,
  );
}

/** The targets of one run: per series k = 2, 4 throughput and k = 4 p50; the unsliced pair; the streams; the join. */
export function scaleTargets(run: Pick<ScaleRun, "plan" | "series" | "unsliced" | "join">): Target[] {
  const targets: Target[] = [];
  for (const series of run.series) {
    const one = pointAt(series, 1);
    const n = series.natsNodes;
    const id = `n${n}-s${series.eventStreams}`;
    const which = `${nodesText(n)}, S = ${series.eventStreams}`;
    for (const k of [2, 4]) {
      const many = pointAt(series, k);
      if (!one || !many) continue;
      targets.push(
        judge(
          `scale-throughput-k${k}-${id}`,
          `${k} slices give ≥ ${SCALE_GOALS.perSliceShare}·${k} × one slice's turns/s (${which})`,
          many.turnsPerSec / one.turnsPerSec,
          round(SCALE_GOALS.perSliceShare * k, 2),
          "≥",
          "x",
          `${many.turnsPerSec} ÷ ${one.turnsPerSec} turns/s`,
        ),
      );
    }
    const four = pointAt(series, 4);
    if (one && four)
      targets.push(
        judge(
          `scale-p50-k4-${id}`,
          `p50 at 4 slices ≤ ${SCALE_GOALS.p50Growth} × p50 at 1 slice (${which})`,
          four.latency.p50 / one.latency.p50,
          SCALE_GOALS.p50Growth,
          "≤",
          "x",
          `${ms(four.latency.p50)} ÷ ${ms(one.latency.p50)} ms`,
        ),
      );
  }
  const [single, three] = run.unsliced;
  if (single && three)
    targets.push(
      judge(
        "scale-unsliced-3-runners",
        `unsliced, 3 runners give ≥ ${SCALE_GOALS.threeRunners} × 1 runner's turns/s`,
        three.turnsPerSec / single.turnsPerSec,
        SCALE_GOALS.threeRunners,
        "≥",
        "x",
        `${three.turnsPerSec} ÷ ${single.turnsPerSec} turns/s`,
      ),
    );
  targets.push(streamsTarget(run.series));
  targets.push(...joinTargets(run));
  return targets;
}

/** One line per target for the terminal: PASS, MISS or not measured, with its ratio. */
export function targetLines(targets: Target[]): string[] {
  return targets.map((t) =>
    t.notMeasured !== undefined
      ? `not measured ${t.id}: ${t.notMeasured}`
      : `${t.met ? "PASS" : "MISS"} ${t.id}: ${round(t.measured, 2)}${t.unit ?? "x"} (goal ${t.direction} ${t.goal}${t.unit ?? "x"})`,
  );
}

const cell = (value: number) => (Number.isFinite(value) ? String(round(value, 1)) : "–");

const POINT_HEADERS = [
  "slices (runner + 2 workers)",
  "turns/s",
  "p50 ms",
  "p95 ms",
  "CPU/turn runners ms",
  "workers ms",
  "client ms",
  "each NATS node ms",
  "throttled ms",
  "cores used",
  "other processes, cores",
  "failed",
];

function pointRow(point: ScalePoint): (string | number)[] {
  const { perTurn } = point;
  return [
    point.slices > 0 ? point.slices : `unsliced, ${point.runners} runner${point.runners > 1 ? "s" : ""} × 2 workers`,
    cell(point.turnsPerSec),
    ms(point.latency.p50),
    ms(point.latency.p95),
    ms(perTurn.runners),
    ms(perTurn.workers),
    ms(perTurn.client),
    point.natsNodePerTurn.map((value) => ms(value)).join(" / "),
    point.throttledMs,
    point.cores,
    point.backgroundCores,
    point.failed,
  ];
}

/**
 * The points where the slices' quotas and the CPU NATS used add up to more cores than the machine
 * has: there a slice cannot get its quota, so throughput cannot grow with k. (NATS's slices are
 * caps it stays well under, so its measured use counts, not its quota.)
 */
export function oversubscribed(run: Pick<ScaleRun, "plan" | "series" | "environment">): string[] {
  return run.series.flatMap((series) =>
    series.points
      .map((point) => {
        const nats = point.natsNodePerTurn.reduce((total, value) => total + value, 0) * (point.turnsPerSec / 1000);
        return { k: point.slices, cores: round(point.slices * run.plan.quota + nats, 2) };
      })
      .filter(({ cores }) => cores > run.environment.cores)
      .map(({ k, cores }) => `${nodesText(series.natsNodes)}, S = ${series.eventStreams}, ${k} slices: ${cores} cores`),
  );
}

function oversubscribedNote(run: ScaleRun): string[] {
  const over = oversubscribed(run);
  if (over.length === 0) return [];
  return [
    `**Quotas above the machine** (${over.join("; ")}, the slices' quotas plus the CPU NATS used; the machine has ${run.environment.cores}): a slice there gets less than its quota and throughput cannot grow with k; those ratios measure this machine's size, not the runtime. A machine with more than k × ${run.plan.quota} cores plus NATS's share, or a smaller BENCH_SCALE_QUOTA, reads them.`,
    "",
  ];
}

/** Per series and k, the busiest NATS node's CPU per turn and the turns/s: S = 1 beside S ≥ 5. */
function streamsTable(run: ScaleRun): string {
  const rows = run.series.flatMap((series) =>
    series.points.map((point) => [
      `${nodesText(series.natsNodes)}, S = ${series.eventStreams}`,
      point.slices,
      ms(busiestNode(point)),
      cell(point.turnsPerSec),
    ]),
  );
  return table(["series", "slices", "busiest NATS node, CPU/turn ms", "turns/s"], rows);
}

/** The section, with its markers. */
export function renderScale(run: ScaleRun, targets: Target[] = scaleTargets(run)): string {
  const { environment, plan } = run;
  return [
    SCALE_SECTION_START,
    "## Scaling on CPU slices",
    "",
    `Generated by \`npm run bench -- --scale\` (bench/scaleSlices.ts) on ${environment.cores} cores (${environment.cpuModel}), ${environment.date.slice(0, 10)}, at ${environment.commit}, in ${run.durationS} s; results in [benchmarks-scale.json](benchmarks-scale.json). A slice is one runner (\`runner --cognition runner\`) and two workers (\`worker --agents '*' --services memory\`) in a cgroup of ${plan.quota} core; each NATS node runs in a slice of ${plan.natsQuota} core (cgroups: ${run.cgroups}). Network: ${run.network}. Each point runs ${plan.turnsPerSlice} measured turns per slice at ${plan.sessionsPerSlice} concurrent sessions per slice (closed loop, the offline model) after one unmeasured turn per session: the load per slice is the same at every k. CPU per turn is each process's /proc CPU time over the point ÷ its turns; \`throttled ms\` is how long the quota held the runner-and-workers slices back over the point (cpu.stat), summed.${plan.smoke ? " **Smoke run** (BENCH_SCALE_TURNS below the default, or only some BENCH_SCALE_PHASES): numbers too short to read." : ""}`,
    "",
    ...oversubscribedNote(run),
    "### Targets",
    "",
    targetsTable(targets),
    "",
    ...run.series.flatMap((series) => [
      `### ${seriesLabel(series)}`,
      "",
      table(POINT_HEADERS, series.points.map(pointRow)),
      "",
    ]),
    ...(run.unsliced.length === 0
      ? []
      : [
          `### Unsliced on the whole machine (three NATS nodes, R3, ${streamsText(UNSLICED_EVENT_STREAMS)})`,
          "",
          table(POINT_HEADERS, run.unsliced.map(pointRow)),
          "",
        ]),
    ...joinSection(run),
    ...(run.series.length === 0
      ? []
      : [
          "### S = 1 against S ≥ 5 event streams",
          "",
          `The busiest NATS node's CPU per turn, which the \`scale-nats-streams\` target compares (5 nodes, S ≥ 5 against 3 nodes, S = 1); each series' runners made its log with \`CONCLAVE_EVENT_STREAMS\` = S.`,
          "",
          streamsTable(run),
        ]),
    SCALE_SECTION_END,
  ].join("\n");
}

/** The section from docs/benchmarks-scale.json, or nothing when there is none yet. */
export function scaleFromFile(path: string): string {
  if (!existsSync(path)) return "";
  return renderScale(JSON.parse(readFileSync(path, "utf8")) as ScaleRun);
}

/** Puts the scale section into the report at `path`: in place of its earlier one, else at the end. */
export function spliceScaleSection(path: string, section: string): void {
  spliceSection(path, section, SCALE_SECTION_START, SCALE_SECTION_END);
}
