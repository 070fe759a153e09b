/**
 * The join phase's part of the "Scaling on CPU slices" section (bench/scaleReport.ts): its targets
 * (issue 36, membership under load) and its table, from the `join` of a {@link ScaleRun}.
 */
import { ms, table } from "./markdown.ts";
import { JOIN_WAIT_BUDGET_MS } from "./scaleJoin.ts";
import type { ScaleRun } from "./scaleSlices.ts";
import { judge, notMeasured, type Target } from "./targets.ts";

const WAIT_STATEMENT = `a runner added mid-load: no turn in flight at or started after the join takes more than ${JOIN_WAIT_BUDGET_MS} ms longer than the p99 before it`;
const LOST_STATEMENT = "a runner added mid-load: 0 turns lost, 0 run twice";

/** Why the join phase has no result: not asked for (BENCH_SCALE_PHASES), or a run made before it. */
function whyNotMeasured(run: Pick<ScaleRun, "plan">): string {
  if (run.plan.phases === undefined) return "not in this run (made before the bench measured it)";
  return run.plan.phases.includes("join")
    ? "the join phase gave no result"
    : "the join phase did not run (BENCH_SCALE_PHASES)";
}

/**
 * `scale-join-wait`: the longest turn in flight at, or started after, the join's start minus the
 * p99 of the turns before it, ≤ 2000 ms; `scale-join-lost-twice`: failed plus run-twice turns, 0.
 */
export function joinTargets(run: Pick<ScaleRun, "plan" | "join">): Target[] {
  const { join } = run;
  if (!join) {
    const reason = whyNotMeasured(run);
    return [
      notMeasured("scale-join-wait", WAIT_STATEMENT, JOIN_WAIT_BUDGET_MS, "≤", " ms", reason),
      notMeasured("scale-join-lost-twice", LOST_STATEMENT, 0, "≤", " turns", reason),
    ];
  }
  return [
    judge(
      "scale-join-wait",
      WAIT_STATEMENT,
      join.longestAcrossMs - join.p99BeforeMs,
      JOIN_WAIT_BUDGET_MS,
      "≤",
      " ms",
      `${ms(join.longestAcrossMs)} − ${ms(join.p99BeforeMs)} ms; ${join.overBudget} of ${join.turnsAcross} turns over`,
    ),
    judge(
      "scale-join-lost-twice",
      LOST_STATEMENT,
      join.failed + join.runTwice,
      0,
      "≤",
      " turns",
      `${join.failed} lost, ${join.runTwice} run twice`,
    ),
  ];
}

/** The "A runner joins mid-load" subsection, or nothing when the phase did not run. */
export function joinSection(run: Pick<ScaleRun, "plan" | "join">): string[] {
  const { join } = run;
  if (!join) return [];
  return [
    "### A runner joins mid-load (three NATS nodes)",
    "",
    `Unsliced, S = ${join.eventStreams}: ${join.runners} runner × 2 workers carry ${join.sessions} sessions in a closed loop (one unmeasured turn each first); after half the turns, ${join.added} more runners start while the load goes on, and it goes on until as many turns again completed after they were ready. *Across* are the turns in flight at the join's start or started after it; *run twice* counts turns whose log holds more than one \`TURN_COMPLETED\` or a \`TURN_RESUMED\`.`,
    "",
    table(
      [
        "turns before",
        "p99 before ms",
        "join ms (start → ready)",
        "turns across",
        "longest across ms",
        `over p99 + ${JOIN_WAIT_BUDGET_MS} ms`,
        "lost",
        "run twice",
      ],
      [
        [
          join.turnsBefore,
          ms(join.p99BeforeMs),
          join.joinMs,
          join.turnsAcross,
          ms(join.longestAcrossMs),
          join.overBudget,
          join.failed,
          join.runTwice,
        ],
      ],
    ),
    "",
  ];
}
