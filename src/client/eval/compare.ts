/**
 * Two eval runs side by side: what changed per case and in aggregate, from
 * their reports (`conclave eval --report FILE`, then `--compare FILE`).
 */
import { z } from "zod";
import { describeIssues } from "../../contracts/issues.ts";
import { InvalidRequestError } from "../../errors.ts";

/** What a report must hold to be compared with (the rest is ignored). */
const ComparableReport = z.object({
  run_id: z.string(),
  score: z.number(),
  cases: z.array(z.object({ id: z.string(), score: z.number(), passed: z.boolean() })),
});

/** What a comparison reads of a run's report (an EvalReport, or one read back from JSON). */
export interface ComparableRun {
  run_id: string;
  score: number;
  cases: readonly { id: string; score: number }[];
}

/** One case in both runs, or in one of them. */
export interface CaseChange {
  id: string;
  /** Its score in the earlier run; absent when it was not there. */
  before?: number;
  /** Its score in this run; absent when it is not there any more. */
  after?: number;
  /** `after - before`, when both are there. */
  delta?: number;
  /** `better`, `worse`, `same`, `new` (only in this run) or `gone` (only in the earlier one). */
  change: "better" | "worse" | "same" | "new" | "gone";
}

/** Two runs compared. */
export interface EvalComparison {
  before_run: string;
  after_run: string;
  before_score: number;
  after_score: number;
  delta: number;
  cases: CaseChange[];
}

/** An earlier report, as read back from JSON; InvalidRequestError (one line) when it is none. */
export function parseReport(value: unknown, source = "report"): ComparableRun {
  const parsed = ComparableReport.safeParse(value);
  if (!parsed.success)
    throw new InvalidRequestError(
      `${source} is not an eval report: ${describeIssues(parsed.error, { limit: 2, join: "; " })}`,
    );
  return parsed.data;
}

/** How `after` (this run) differs from `before`, case by case in this run's order, then the cases gone. */
export function compareReports(before: ComparableRun, after: ComparableRun): EvalComparison {
  const earlier = new Map(before.cases.map((one) => [one.id, one.score]));
  const cases: CaseChange[] = after.cases.map(({ id, score }) => {
    const previous = earlier.get(id);
    if (previous === undefined) return { id, after: score, change: "new" };
    const delta = score - previous;
    return {
      id,
      before: previous,
      after: score,
      delta,
      change: Math.abs(delta) < 1e-9 ? "same" : delta > 0 ? "better" : "worse",
    };
  });
  const current = new Set(after.cases.map((one) => one.id));
  for (const { id, score } of before.cases) if (!current.has(id)) cases.push({ id, before: score, change: "gone" });
  return {
    before_run: before.run_id,
    after_run: after.run_id,
    before_score: before.score,
    after_score: after.score,
    delta: after.score - before.score,
    cases,
  };
}
