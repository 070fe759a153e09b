import type { BurstRun } from "./burst.ts";
import type { LoadTakeoverRun } from "./loadTakeover.ts";
import { esc, ms, table } from "./markdown.ts";
import type { UnderLoadPlan } from "./plan.ts";
import type { SoakRun } from "./soak.ts";
import { round, summarize } from "./stats.ts";
import type { Target } from "./targets.ts";
import type { UnderLoadRun } from "./underLoad.ts";
import { UNDER_LOAD_GOALS } from "./underLoadTargets.ts";

const notRun = (title: string, phase: { error: string }) => `### ${title}\n\nCould not run: ${esc(phase.error)}`;

const missedLines = (targets: Target[], prefix: string): string[] =>
  targets.filter((t) => t.id.startsWith(prefix) && !t.met).map((t) => `- **Missed**: ${t.statement}: ${t.verdict}.`);

const counts = (record: Record<string, number>) =>
  Object.entries(record)
    .map(([status, n]) => `${n} ${esc(status)}`)
    .join(", ") || "none";

function burstSection(burst: { modelLatencyMs: number; patienceMs: number; runs: BurstRun[] }, targets: Target[]) {
  const sessions = burst.runs[0]?.sessions ?? 0;
  return [
    `### A burst of ${sessions} sessions (simulated ${burst.modelLatencyMs} ms model)`,
    "",
    `Each run is a fresh deployment in LLM mode (nats-server, the three workers, a runner; the simulated model answers every call after ${burst.modelLatencyMs} ms through the real \`openai\` client). After 5 warm-up turns, ${sessions} sessions submit one turn each at once through the public client, as \`conclave send\` does; each has a patience of ${burst.patienceMs / 1000} s: a \`busy\` answer is retried after its \`retry_after_ms\` while that falls within the patience, and counts as *refused busy* once it does not. *Failed*: ended other than \`Complete\`, or refused otherwise; *not in time*: accepted, not completed within the patience. *Poisoned*: dead letters under \`conclave.dlq.poison\` during the burst, or turns whose status is failed as poison. *Lapses*: the runner's \`liveness lease lapsed\` log lines (its pino JSON on stderr, read by the bench). Latency of the completed turns runs from their first submission to \`TURN_COMPLETED\`. *Model connection errors*: workers' model calls that never reached the bench's model server (\`Connection error\` in their log; the server runs in the bench's own process, on the same two cores): a turn whose agents lost calls that way ends \`PartialSuccess\`.`,
    "",
    table(
      [
        "run",
        "Complete",
        "refused busy",
        "failed",
        "not in time",
        "poisoned",
        "lease lapses",
        "busy answers",
        "model connection errors",
        "p50 ms",
        "p95 ms",
        "max ms",
        "s",
      ],
      burst.runs.map((r, i) => [
        i + 1,
        r.completed,
        r.refusedBusy,
        r.failed,
        r.timedOut,
        r.poisoned,
        r.lapses,
        r.busyAnswers,
        r.modelConnectionErrors ?? "–",
        ms(r.latency.p50),
        ms(r.latency.p95),
        ms(r.latency.max),
        round(r.elapsedMs / 1000, 1),
      ]),
    ),
    "",
    ...burst.runs.map(
      (r, i) =>
        `- Run ${i + 1}: the submissions that did not end Complete: ${counts(r.statuses)}; the stored status of those accepted: ${counts(r.turnStatuses ?? {})}; their warnings (turns with each): ${counts(r.warnings ?? {})}${r.errors.length > 0 ? `; errors: ${r.errors.map(esc).join("; ")}` : ""}.`,
    ),
    ...missedLines(targets, "load-burst-"),
  ].join("\n");
}

function soakSection(soak: SoakRun, targets: Target[]) {
  const every = soak.samples.length > 1 ? round(soak.samples.at(-1)!.atS / soak.samples.length, 1) : 0;
  return [
    `### A soak of ${soak.turns} turns`,
    "",
    `The offline deployment (nats-server, three workers, a runner), ${soak.clients} sessions at once, each sending its turns back to back until ${soak.turns} have run; every turn comes from a new client, as \`conclave send\` sends it: it connects, submits, follows the turn to \`TURN_COMPLETED\`, and closes, so consumers come and go. About every ${every} s the bench reads the live consumers on every stream (JetStream's stream list), nats-server's RSS (/proc) and the runner's lease lapses. Consumers per active client leave out the ${soak.baselineConsumers} the runtime held before the first turn, over the samples taken while all ${soak.clients} sessions ran; nats-server's CPU per turn is its CPU time over the soak (/proc) ÷ the turns. Stored bytes per turn: the growth of every stream's bytes (the event log, the KV buckets, memory) from before the first turn to after the last, ÷ the turns. Each sample also reads the runner's and workers' RSS (/proc); placed by the turns run so far, the first quarter of the soak is warm-up, and a process's growth is the median RSS of the last quarter's samples against the second quarter's.`,
    "",
    table(
      [
        "turns",
        "Complete",
        "not Complete",
        "busy answers",
        "s",
        "max consumers",
        "per client",
        "after",
        "nats-server max RSS MiB",
        "nats-server CPU ms/turn",
        "stored B/turn",
        "largest RSS growth once warm",
        "lease lapses",
      ],
      [
        [
          soak.turns,
          soak.completed,
          soak.notComplete,
          soak.busyAnswers,
          round(soak.elapsedMs / 1000, 0),
          soak.maxConsumers,
          soak.maxConsumersPerClient,
          soak.consumersAfter,
          soak.maxNatsRssMiB,
          soak.natsCpuPerTurnMs,
          soak.storedBytesPerTurn ?? "–",
          soak.rssGrowth?.[0] ? `${round(soak.rssGrowth[0].growth * 100, 1)}% (${soak.rssGrowth[0].process})` : "–",
          soak.lapses,
        ],
      ],
    ),
    "",
    ...(soak.errors.length > 0 ? [`Errors seen: ${soak.errors.map(esc).join("; ")}.`, ""] : []),
    ...missedLines(targets, "load-soak-"),
  ].join("\n");
}

function takeoverSection(run: LoadTakeoverRun, targets: Target[]) {
  return [
    `### Takeover with ${run.inFlight} turns in flight`,
    "",
    `LLM mode against the simulated ${run.modelLatencyMs} ms model, with two runners and every worker twice (two workers per step): ${run.layout.map((name) => `\`${esc(name)}\``).join(", ")}. Each round, ${run.inFlight} sessions submit one turn each at once, every turn's text its own; once a tenth of them has stored \`${run.killAfter}\` (wave 0), the runner that owns the turn that crossed that mark is killed with SIGKILL; a new runner starts after the round. A turn *taken over* shows \`TURN_RESUMED\` after the kill; times are from the kill to the client seeing it and \`TURN_COMPLETED\`. The model server keeps every request of the round: one identical to an earlier one was asked again. With no kill, the same load made ${run.control.modelCalls} model calls, ${run.control.repeatedModelCalls} of them repeats${repeatedBy(run.control)}; ${run.control.notComplete} of its turns did not end \`Complete\`.`,
    "",
    table(
      ["kill", "in flight", "taken over", "p50 ms", "p95 ms", "max ms", "model calls", "repeated", "not Complete"],
      run.kills.map((k, i) => {
        const resumed = summarize(k.resumedMs);
        return [
          i + 1,
          k.inFlightAtKill ?? "–",
          k.takenOver,
          ms(resumed.p50),
          ms(resumed.p95),
          ms(resumed.max),
          k.modelCalls,
          k.repeatedModelCalls,
          k.notComplete,
        ];
      }),
    ),
    "",
    ...run.kills.flatMap((k, i) =>
      k.repeatedModelCalls > 0 ? [`- Kill ${i + 1}: repeated${repeatedBy(k)}.`, ""] : [],
    ),
    `Over every kill: kill → \`TURN_RESUMED\` p50 ${ms(run.resumed?.p50)} ms, p95 ${ms(run.resumed?.p95)} ms (${run.resumed?.n ?? 0} turns); kill → \`TURN_COMPLETED\` p50 ${ms(run.completed?.p50)} ms, p95 ${ms(run.completed?.p95)} ms. The surviving runners' lease lapses over the phase: ${run.lapses}.`,
    ...missedLines(targets, "load-takeover-"),
  ].join("\n");
}

/** " (council 3, stream 1)": what the repeated requests asked, when there were any (absent in older runs). */
const repeatedBy = (round: { repeatedBy?: Record<string, number> }) =>
  round.repeatedBy && Object.keys(round.repeatedBy).length > 0 ? ` (${counts(round.repeatedBy)})` : "";

export const UNDER_LOAD_SECTION_START =
  "<!-- under-load: written by npm run bench, or alone by npm run bench -- --only under-load -->";
export const UNDER_LOAD_SECTION_END = "<!-- /under-load -->";

/**
 * The report's "Under load (issue 42)" section, between two markers so that `--only under-load`
 * replaces only it. `ownTargets`: the section's targets table, for a run of the phase alone (a full
 * run has them in the report's Targets table).
 */
export function renderUnderLoad(
  run: UnderLoadRun | undefined,
  plan: UnderLoadPlan | undefined,
  ownTargets?: string,
): string {
  if (!run)
    return `${UNDER_LOAD_SECTION_START}\n## Under load (issue 42)\n\nNot in this run (a run made before the section existed).\n${UNDER_LOAD_SECTION_END}`;
  const g = UNDER_LOAD_GOALS;
  return [
    UNDER_LOAD_SECTION_START,
    "## Under load (issue 42)",
    "",
    `Issue 42's targets: ${plan?.burstSessions ?? "?"} sessions at once in LLM mode (runs: ${plan?.burstRuns ?? "?"}), every submission ending \`Complete\` or refused \`busy\` within its patience, no turn poisoned, no lease lapse; a soak of ${plan?.soakTurns ?? "?"} turns with at most ${g.soakConsumersPerClient} live consumers per active client, nats-server within ${g.soakNatsRssMiB} MB of RSS and ${g.soakNatsCpuPerTurnMs} ms of CPU per turn, no lease lapse, and (issue 37) no turn degraded, at most ${g.soakStoredBytesPerTurn} bytes stored per turn, the runner's and workers' RSS within ${g.soakRssGrowthPercent}% once warm; a takeover with two workers per step repeating no model call, p95 at most ${g.takeoverP95Ms / 1000} s with ${plan?.inFlight ?? 100} turns in flight. ${ownTargets ? "The targets and their ratios are in the table below" : "The targets are in the [Targets](#targets) table"}; the measurements behind them follow.`,
    "",
    ...(ownTargets ? [`### Targets (run of this phase alone)`, "", ownTargets, ""] : []),
    "error" in run.burst ? notRun("Burst", run.burst) : burstSection(run.burst, run.targets),
    "",
    "error" in run.soak ? notRun("Soak", run.soak) : soakSection(run.soak, run.targets),
    "",
    "error" in run.takeover
      ? notRun("Takeover with turns in flight", run.takeover)
      : takeoverSection(run.takeover, run.targets),
    UNDER_LOAD_SECTION_END,
  ].join("\n");
}
