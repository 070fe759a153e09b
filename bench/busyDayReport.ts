import { BUSY_DAY_GOALS, type BusyDayRun, failed } from "./busyDay.ts";
import type { IdleSessionsRun } from "./idleSessions.ts";
import { esc, ms, pct, profileTable, table } from "./markdown.ts";
import type { OverloadLevel, OverloadRun } from "./overload.ts";
import type { BenchPlan } from "./plan.ts";
import { round } from "./stats.ts";
import type { TakeoverRun } from "./takeover.ts";
import type { Target } from "./targets.ts";

const notRun = (phase: { error: string }) => `Could not run: ${esc(phase.error)}`;

/** Where targets of a phase were missed: one line each, by how much. */
const missedLines = (targets: Target[], prefix: string): string[] =>
  targets.filter((t) => t.id.startsWith(prefix) && !t.met).map((t) => `- **Missed**: ${t.statement}: ${t.verdict}.`);

function overloadSection(run: OverloadRun, targets: Target[]): string {
  const row = (label: string, l: OverloadLevel) => [
    label,
    l.sessions,
    round(l.turnsPerSec, 1),
    ms(l.admittedLatency.p50),
    ms(l.admittedLatency.p99),
    l.queuedLatency ? ms(l.queuedLatency.p50) : "–",
    ms(l.runtime?.p50),
    l.admitted,
    l.queued,
    l.busyAnswers,
    l.rejected,
    l.degraded,
  ];
  const o = run.overload;
  const runner = run.profile?.summaries.find((s) => s.process === "runner");
  return [
    `### ${o.sessions} sessions at once (simulated ${run.modelLatencyMs} ms model)`,
    "",
    `The full turn in LLM mode against the latency-hiding phase's simulated model (every call — agents, council, voice, critics — answered after ${run.modelLatencyMs} ms). Closed loop: each session sends one turn at a time, for a fixed time per level; a \`busy\` answer (queues full) is retried after its \`retry_after_ms\` hint. A turn is *admitted* when it ran at once (its ack's \`admission.state\` is \`running\`), *queued* when it waited for a place (ack \`queued\` or a \`TURN_QUEUED\` event), *degraded* when it ended other than \`Complete\` or not at all. Latency runs from the accepted submission to \`TURN_COMPLETED\`; *running* is the runner's \`total_time_ms\` of every turn of the level (from \`TURN_STARTED\`: the wait for a place left out). Each level with more than one session first runs every session's first turn unmeasured (it opens the session).${
      o.admissionReported
        ? ""
        : " **The runner reported no admission in this run** (acks without `admission`): every turn counts as admitted."
    }`,
    "",
    table(
      [
        "level",
        "sessions",
        "turns/s",
        "admitted p50 ms",
        "admitted p99 ms",
        "queued p50 ms",
        "running p50 ms",
        "admitted",
        "queued",
        "busy answers",
        "rejected",
        "degraded",
      ],
      [row("unloaded", run.unloaded), row("baseline", run.baseline), row("overload", o)],
    ),
    "",
    `Outcomes at ${o.sessions} sessions: ${Object.entries(o.statuses)
      .map(([status, n]) => `${n} ${status}`)
      .join(", ")}; the longest queue seen: position ${o.maxPosition}. CPU meanwhile (cores): ${o.cpu
      .map((c) => `${c.process} ${c.cores}`)
      .join(", ")}; other processes ${o.backgroundCores}.`,
    ...missedLines(targets, "busy-"),
    ...(runner && targets.some((t) => t.id.startsWith("busy-") && !t.met)
      ? [
          "",
          `Where the runner's time went at ${o.sessions} sessions (V8 sampling profile, \`${run.profile?.directory}\`; busy ${pct(runner.wallMs > 0 ? runner.busyMs / runner.wallMs : 0)} of the wall time, GC ${ms(runner.gcMs)} ms):`,
          "",
          profileTable(runner, "topSelf", 10),
          "",
          profileTable(runner, "byOrigin", 8),
        ]
      : []),
  ].join("\n");
}

function idleSection(run: IdleSessionsRun, targets: Target[]): string {
  const b = run.baseline;
  return [
    "### Idle sessions",
    "",
    `The offline deployment with a short idle-session TTL (\`CONCLAVE_IDLE_SESSION_TTL_MS=${run.ttlMs}\`; a runner without eviction ignores it) opens sessions, one turn each, then waits the TTL (plus 2 s) and reads the runner: RSS and JS heap after two forced full GCs against its baseline (before any of these sessions), its CPU over ${round(run.sampleMs / 1000, 1)} s while every session is idle (/proc), and the account's KV and JetStream API traffic meanwhile (a subscription on \`$KV.>\` and \`$JS.API.>\` by the bench's unrestricted user: KV ops are \`$KV.<bucket>\` writes and direct/message gets on \`KV_<bucket>\` streams).`,
    "",
    table(
      [
        "idle sessions",
        "opened in s",
        "runner RSS after opening MiB",
        "runner RSS after TTL MiB",
        "RSS ÷ baseline",
        "heap MiB",
        "runner cores",
        "KV ops/s",
        "JetStream API req/s",
        "busiest",
      ],
      [
        [
          "baseline",
          "–",
          "–",
          b.rssMiB,
          "1x",
          b.heapUsedMiB,
          b.runnerCores,
          b.traffic.kvOpsPerSec,
          b.traffic.jsApiPerSec,
          busiest(b.traffic.top),
        ],
        ...run.readings.map((r) => [
          r.sessions,
          r.openS,
          r.rssAfterOpenMiB,
          r.rssMiB,
          `${round(r.rssMiB / b.rssMiB, 2)}x`,
          r.heapUsedMiB,
          r.runnerCores,
          r.traffic.kvOpsPerSec,
          r.traffic.jsApiPerSec,
          busiest(r.traffic.top),
        ]),
      ],
    ),
    ...missedLines(targets, "idle-"),
    ...memoryExplained(run, targets),
  ].join("\n");
}

/** Where the runner's memory is when the RSS target is missed: the JS heap against the RSS the allocator keeps. */
function memoryExplained(run: IdleSessionsRun, targets: Target[]): string[] {
  const last = run.readings.at(-1);
  if (!last || targets.find((t) => t.id === "idle-rss-vs-baseline")?.met !== false) return [];
  const heapAbove = round(last.heapUsedMiB - run.baseline.heapUsedMiB, 1);
  return [
    `- Where the memory is: after eviction the runner's JS heap is ${last.heapUsedMiB} MiB, ${heapAbove} MiB above its baseline (${run.baseline.heapUsedMiB} MiB): the evicted sessions' objects are gone. The rest of the RSS is memory the process keeps from its high-water mark while the sessions were opened (${last.rssAfterOpenMiB} MiB RSS right after): V8 and the allocator do not hand freed pages back to the system. Opening the sessions in smaller bursts, or a runner started with a smaller young generation (\`--max-semi-space-size\`), would lower that mark; the heap figure is the cost of the sessions themselves.`,
  ];
}

const busiest = (top: { subject: string; perSecond: number }[]) =>
  top.length > 0
    ? top
        .slice(0, 3)
        .map((t) => `${esc(t.subject)} ${t.perSecond}/s`)
        .join(", ")
    : "none";

function takeoverSection(run: TakeoverRun, targets: Target[]): string {
  return [
    "### Takeover after kill -9",
    "",
    `Two runners and the three workers, LLM mode against the simulated ${run.modelLatencyMs} ms model. One turn at a time; once its \`${run.killAfter}\` (wave 0) is stored, the runner that owns it (its turn status) is killed with SIGKILL, and a new runner starts after the turn ends, so two are up for the next kill. Times are from the kill to the client seeing \`TURN_RESUMED\` and \`TURN_COMPLETED\`. The model server counts each turn's calls: an undisturbed turn makes ${run.modelCallsPerTurn}; any more were made again (an identical repeat asks the same agent the same thing).`,
    "",
    table(
      ["", "kills", "p50 ms", "p95 ms", "max ms"],
      [
        ["kill → TURN_RESUMED", run.resumed?.n ?? 0, ms(run.resumed?.p50), ms(run.resumed?.p95), ms(run.resumed?.max)],
        [
          "kill → TURN_COMPLETED",
          run.completed?.n ?? 0,
          ms(run.completed?.p50),
          ms(run.completed?.p95),
          ms(run.completed?.max),
        ],
      ],
    ),
    "",
    `${run.kills.length} kills; model calls per killed turn: ${run.kills.map((k) => k.modelCalls).join(", ")} (${run.extraModelCalls} beyond the undisturbed turn's in all, ${run.repeatedModelCalls} identical repeats); outcomes: ${run.kills.map((k) => k.status).join(", ")}.`,
    ...missedLines(targets, "takeover-"),
  ].join("\n");
}

/** The report's "A busy day" section. */
export function renderBusyDay(run: BusyDayRun | undefined, plan: BenchPlan): string {
  if (!run) return "## A busy day\n\nNot in this run (a run made before the scenario existed).";
  const g = BUSY_DAY_GOALS;
  return [
    "## A busy day",
    "",
    `Issue 23's targets, each phase on its own deployment (nats-server, three workers, a runner): with ${plan.busyDay?.sessions ?? "?"} sessions at once, zero turns degraded by overload, admitted p50 within ${g.admittedP50VsUnloaded}x of the unloaded turn and throughput at least ${g.throughputVsBaseline * 100}% of ${plan.busyDay?.baselineSessions ?? 100} sessions'; the runner at most ${g.idleRunnerCores} cores with every session idle, its RSS within ${g.idleRssAboveBaselineMiB} MB of its baseline once they are evicted, and KV traffic that does not grow with the sessions (at most ${g.kvOpsGrowth}x for ten times as many); a runner killed mid-turn taken over with p95 ≤ ${g.takeoverP95Ms / 1000} s, repeating no model call. The KV goal is this bench's reading of "independent of their number".`,
    "",
    "The targets, with their values and how far each is from its goal, are in the [Targets](#targets) table; the measurements behind them follow.",
    "",
    failed(run.overload) ? `### Overload\n\n${notRun(run.overload)}` : overloadSection(run.overload, run.targets),
    "",
    failed(run.idle) ? `### Idle sessions\n\n${notRun(run.idle)}` : idleSection(run.idle, run.targets),
    "",
    failed(run.takeover) ? `### Takeover\n\n${notRun(run.takeover)}` : takeoverSection(run.takeover, run.targets),
  ].join("\n");
}
