import { readFileSync, writeFileSync } from "node:fs";
import { connect } from "../../client/client.ts";
import { compareReports, type EvalComparison, parseReport } from "../../client/eval/compare.ts";
import { parseDataset } from "../../client/eval/dataset.ts";
import { type CaseResult, DEFAULT_EVAL_THRESHOLD, type EvalReport, runEval } from "../../client/eval/runEval.ts";
import type { EvalTarget } from "../../client/eval/target.ts";
import { printable } from "../../client/printable.ts";
import { AgentId } from "../../contracts/ids.ts";
import type { JsonObject } from "../../contracts/recipeRun.ts";
import { messageOf } from "../../errors.ts";
import { readRecipeForRunner } from "../../recipes/load.ts";
import { UsageError } from "../args.ts";
import { defineCommand } from "../command.ts";
import { EXIT } from "../failures.ts";

const help = `conclave eval: run a dataset's cases as turns, score the replies, report per case and in aggregate

Usage: conclave eval DATASET --agent ID [--tools LIST] [options]
       conclave eval DATASET --recipe FILE [--output PATH] [options]

  DATASET            the cases: JSONL (one {"id", "input", "expected", "scorers"} a line) or a
                     JSON array of them; see docs/evals.md for the format and the scorers
  --agent ID         each case is answered by this agent alone (a one-step recipe naming it)
  --tools LIST       the tools the agent may call, comma-separated (with --agent)
  --recipe FILE      each case is a run of this recipe (YAML or JSON)
  --output PATH      the blackboard path whose value is the reply (with --recipe)
                     [the output of the node that completed last]
  --input-key NAME   the input a case's text input is given as  [message]
  --threshold X      the aggregate score (0 to 1) the run passes at  [${DEFAULT_EVAL_THRESHOLD}]
  --concurrency N    cases run at once  [1]
  --timeout MS       patience for each case's turn  [120000]
  --run-id ID        names the run and its sessions, eval-<ID>-<case> (1-16 of A-Z a-z 0-9 _ -)
                     [8 random hex digits]
  --report FILE      also write the report as JSON to FILE (for --compare later)
  --compare FILE     an earlier run's report: show each case's change and the aggregate's
  --json             print the report (and the comparison) as one JSON object

Each case runs in its own session, eval-<run>-<case>, kept on the tape: read it with
conclave events --session <it>, fork it with conclave fork. A line per case is printed on
stderr as it is scored. The llm_judge scorer asks the model LLM mode configures
(OPENAI_API_KEY, CONCLAVE_LLM_*: conclave config), else the offline judge (the share of the
rubric's terms the reply has); the critics scorer asks the same model's critics, else the
offline ones.

Exit 0 when the aggregate score is at or above --threshold, 1 when it is under it; 2 for a
dataset, recipe or flag that is refused (one line naming the line or case); 3 when NATS, a
runner or the agent's worker is not there.`;

/** A number flag in a range, or a usage error naming the flag. */
function numberFlag(
  value: string | undefined,
  flag: string,
  fallback: number,
  check: (n: number) => boolean,
  want: string,
) {
  if (value === undefined) return fallback;
  const number = Number(value);
  if (value.trim() === "" || !Number.isFinite(number) || !check(number))
    throw new UsageError(`--${flag} must be ${want}, not '${value}'`);
  return number;
}

/** A file's text, or a usage error saying why it cannot be read. */
function readText(file: string, what: string): string {
  try {
    return readFileSync(file, "utf8");
  } catch (error) {
    throw new UsageError(
      `cannot read the ${what} ${file}: ${(error as NodeJS.ErrnoException).code ?? messageOf(error)}`,
    );
  }
}

/** The target the flags name: exactly one of --agent and --recipe, with the flags that go with it. */
function targetOf(values: { agent?: string; recipe?: string; tools?: string; output?: string }): EvalTarget {
  if ((values.agent === undefined) === (values.recipe === undefined))
    throw new UsageError("give one of --agent ID or --recipe FILE, e.g. conclave eval cases.jsonl --agent app.echo");
  if (values.agent !== undefined) {
    if (values.output !== undefined)
      throw new UsageError("--output goes with --recipe (an agent's answer is the reply)");
    const agent = AgentId.safeParse(values.agent);
    if (!agent.success) throw new UsageError(`--agent '${values.agent}': ${agent.error.issues[0]?.message}`);
    const tools = (values.tools ?? "")
      .split(",")
      .map((tool) => tool.trim())
      .filter(Boolean);
    return { agent: agent.data, ...(tools.length > 0 ? { tools } : {}) };
  }
  if (values.tools !== undefined) throw new UsageError("--tools goes with --agent (a recipe lists its agents' tools)");
  const { document } = readRecipeForRunner(values.recipe!, (message) => new UsageError(message));
  return { recipe: document as JsonObject, ...(values.output !== undefined ? { output: values.output } : {}) };
}

const score = (value: number) => value.toFixed(2);

/** One case's progress line (stderr). */
function progressLine(result: CaseResult, done: number, total: number): string {
  const verdict = result.error ? "error" : result.passed ? "pass" : "fail";
  return `[${done}/${total}] ${printable(result.id, { newlines: false })} ${score(result.score)} ${verdict}\n`;
}

/** The report as people read it: a line per case (and why it failed), then the aggregate. */
function printReport(report: EvalReport, comparison: EvalComparison | null): void {
  const width = Math.max(4, ...report.cases.map((one) => one.id.length));
  const lines = [`case${" ".repeat(width - 4)}  score  result  session`];
  for (const one of report.cases) {
    const verdict = one.error ? "error " : one.passed ? "pass  " : "fail  ";
    lines.push(`${one.id.padEnd(width)}  ${score(one.score)}   ${verdict}  ${one.session}`);
    if (one.error) lines.push(`${" ".repeat(width)}    ${printable(one.error, { newlines: false })}`);
    for (const scored of one.scores)
      if (!scored.passed)
        lines.push(
          `${" ".repeat(width)}    ${scored.scorer} ${score(scored.score)}: ${printable(scored.detail, { newlines: false })}`,
        );
  }
  const verdict = report.passed ? "pass" : "FAIL: under the threshold";
  lines.push(
    "",
    `${report.target}, run ${report.run_id} (judge: ${report.judge}): ${report.cases_passed}/${report.cases_total} cases passed`,
    `aggregate ${report.score.toFixed(3)}, threshold ${report.threshold}: ${verdict}`,
  );
  if (comparison) {
    const sign = (delta: number) => (delta >= 0 ? `+${score(delta)}` : score(delta));
    lines.push(
      `compared with run ${comparison.before_run}: ${comparison.before_score.toFixed(3)} → ${comparison.after_score.toFixed(3)} (${sign(comparison.delta)})`,
    );
    for (const change of comparison.cases)
      if (change.change !== "same")
        lines.push(
          `  ${change.id.padEnd(width)}  ${change.change}${change.delta !== undefined ? ` ${sign(change.delta)}` : ""}`,
        );
  }
  process.stdout.write(`${lines.join("\n")}\n`);
}

export default defineCommand({
  help,
  flags: {
    agent: { type: "string" },
    tools: { type: "string" },
    recipe: { type: "string" },
    output: { type: "string" },
    "input-key": { type: "string" },
    threshold: { type: "string" },
    concurrency: { type: "string" },
    timeout: { type: "string" },
    "run-id": { type: "string" },
    report: { type: "string" },
    compare: { type: "string" },
    json: { type: "boolean" },
  },
  positionals: true,
  role: "client",
  async run({ values, positionals, bus }) {
    if (positionals.length !== 1)
      throw new UsageError("give one dataset file, e.g. conclave eval cases.jsonl --agent app.echo");
    const file = positionals[0]!;
    const threshold = numberFlag(
      values.threshold,
      "threshold",
      DEFAULT_EVAL_THRESHOLD,
      (n) => n >= 0 && n <= 1,
      "a number from 0 to 1",
    );
    const concurrency = numberFlag(
      values.concurrency,
      "concurrency",
      1,
      (n) => Number.isInteger(n) && n >= 1 && n <= 64,
      "a whole number from 1 to 64",
    );
    const timeoutMs = numberFlag(values.timeout, "timeout", 120_000, (n) => n > 0, "a positive number of milliseconds");
    const runId = values["run-id"];
    if (runId !== undefined && !/^[A-Za-z0-9_-]{1,16}$/.test(runId))
      throw new UsageError(`--run-id '${runId}': 1-16 characters of A-Z, a-z, 0-9, '_' or '-'`);
    const inputKey = values["input-key"] ?? "message";
    if (!/^[A-Za-z_][A-Za-z0-9_]{0,63}$/.test(inputKey))
      throw new UsageError(`--input-key '${inputKey}': a name of letters, digits and '_'`);
    const target = targetOf(values);
    // Checked before connecting: a bad dataset is a usage error, never a wait on NATS.
    const cases = parseDataset(readText(file, "dataset"), file);
    let earlier: ReturnType<typeof parseReport> | null = null;
    if (values.compare !== undefined) {
      let parsed: unknown;
      try {
        parsed = JSON.parse(readText(values.compare, "report"));
      } catch (error) {
        if (error instanceof UsageError) throw error;
        throw new UsageError(`${values.compare} is not JSON: ${messageOf(error)}`);
      }
      // A --json report of a comparison holds the report under `report`.
      const report = (parsed as { report?: unknown }).report ?? parsed;
      earlier = parseReport(report, values.compare);
    }

    const client = await connect({ nc: await bus() });
    const report = await runEval(client, cases, target, {
      threshold,
      concurrency,
      timeoutMs,
      inputKey,
      ...(runId !== undefined ? { runId } : {}),
      onCase: (result, done, total) => process.stderr.write(progressLine(result, done, total)),
    });
    const comparison = earlier ? compareReports(earlier, report) : null;
    if (values.report !== undefined) writeFileSync(values.report, `${JSON.stringify(report, null, 2)}\n`);
    if (values.json) process.stdout.write(`${JSON.stringify(comparison ? { report, comparison } : report)}\n`);
    else printReport(report, comparison);
    return report.passed ? EXIT.ok : EXIT.turnFailed;
  },
});
