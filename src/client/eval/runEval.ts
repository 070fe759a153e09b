/**
 * Runs an eval: every case of a dataset as a turn (a recipe run) in its own
 * session, named from the run (`eval-<run>-<case>`, so `conclave events` and
 * `fork` read it), scored by the case's scorers; then the aggregate.
 */
import { randomBytes } from "node:crypto";
import type { CognitionBackend } from "../../cognition/backend.ts";
import type { EngineEvent } from "../../contracts/events.ts";
import type { JsonObject } from "../../contracts/recipeRun.ts";
import { isConclaveError, messageOf } from "../../errors.ts";
import { backendFromEnv } from "../../llm/backendFromEnv.ts";
import type { ConclaveClient } from "../client.ts";
import { type DatasetCase, type EvalCaseInput, parseDataset } from "./dataset.ts";
import { type Judge, judgeFromEnv } from "./judge.ts";
import { type ScoreResult, scoreReply } from "./scorers.ts";
import { AGENT_STEP, agentRecipe, caseInputs, type EvalTarget, inputText, replyText, valueAt } from "./target.ts";

/** The aggregate score a run passes at when no threshold is given. */
export const DEFAULT_EVAL_THRESHOLD = 0.8;

/** How to run an eval. */
export interface EvalOptions {
  /** Names the run and its sessions (`eval-<runId>-<case>`): 1-16 of A-Z a-z 0-9 _ -. Default 8 random hex digits. */
  runId?: string;
  /** The aggregate score (0 to 1) the run passes at. Default DEFAULT_EVAL_THRESHOLD (0.8). */
  threshold?: number;
  /** Cases run at once. Default 1. */
  concurrency?: number;
  /** Patience for each case's turn, in ms. Default 120 000. */
  timeoutMs?: number;
  /** The input name a case's message is given under (a recipe's `interface.inputs`). Default `message`. */
  inputKey?: string;
  /** The llm_judge scorer's judge. Default: judgeFromEnv() (the LLM-mode model, else the offline judge). */
  judge?: Judge;
  /** Called as each case is scored, with how many are done out of how many. */
  onCase?: (result: CaseResult, done: number, total: number) => void;
}

/** One case's run and scores. */
export interface CaseResult {
  id: string;
  /** The session it ran in, kept on the tape. */
  session: string;
  /** The turn of the run in that session, when it was accepted. */
  turn?: number;
  /** The reply scored (empty when the run failed). */
  reply: string;
  /** The mean of its scorers' scores (0 when the run failed). */
  score: number;
  /** Every scorer passed. */
  passed: boolean;
  scores: ScoreResult[];
  /** Why the run gave no reply: failed, suspended, timed out. */
  error?: string;
}

/** An eval run's report: per case and in aggregate (the JSON `conclave eval --json` prints and `--compare` reads). */
export interface EvalReport {
  run_id: string;
  /** `agent:<id>` or `recipe:<name>`. */
  target: string;
  /** Who judged llm_judge scorers: the model id, or `offline`. */
  judge: string;
  threshold: number;
  /** The mean of the cases' scores. */
  score: number;
  /** `score` is at or above `threshold`. */
  passed: boolean;
  cases_passed: number;
  cases_total: number;
  cases: CaseResult[];
}

const RUN_ID = /^[A-Za-z0-9_-]{1,16}$/;

/** The target's name in a report. */
function targetName(target: EvalTarget): string {
  if ("agent" in target) return `agent:${target.agent}`;
  const metadata = target.recipe.metadata as { name?: unknown } | undefined;
  const name = metadata?.name ?? target.recipe.name ?? target.recipe.id ?? "recipe";
  return `recipe:${String(name)}`;
}

/** Errors that no case can get past (a refused recipe, an unknown agent, no runner): the run stops. */
const FATAL = new Set([
  "invalid_request",
  "no_responders",
  "unavailable",
  "unknown_agent",
  "forbidden",
  "unauthorized",
]);

/** Runs one case and scores its reply. */
async function runCase(
  client: ConclaveClient,
  item: DatasetCase,
  target: EvalTarget,
  run: Required<Pick<EvalOptions, "runId" | "timeoutMs" | "inputKey" | "judge">> & { critics: CognitionBackend },
): Promise<CaseResult> {
  const session = `eval-${run.runId}-${item.id}`;
  const inputs = caseInputs(item.input, run.inputKey);
  const document = "agent" in target ? agentRecipe(target.agent, Object.keys(inputs), target.tools) : target.recipe;
  let lastOutput: unknown;
  const onEvent = (event: EngineEvent) => {
    if (event.kind === "NODE_COMPLETED" && event.payload.output_key !== undefined) lastOutput = event.payload.output;
  };
  const failed = (error: string, turn?: number): CaseResult => ({
    id: item.id,
    session,
    ...(turn !== undefined ? { turn } : {}),
    reply: "",
    score: 0,
    passed: false,
    scores: [],
    error,
  });
  let result: Awaited<ReturnType<ConclaveClient["run"]>>;
  try {
    result = await client.run(session, document, { inputs, timeoutMs: run.timeoutMs, onEvent });
  } catch (error) {
    if (isConclaveError(error) && FATAL.has(error.code)) throw error;
    return failed(messageOf(error));
  }
  if (result.status === "suspended")
    return failed(`suspended at '${result.node}': an eval case cannot answer a person's prompt`, result.turnId);
  if (result.outcome.status === "Failed" || result.outcome.status === "Cancelled")
    return failed(
      result.outcome.status === "Failed"
        ? `${result.outcome.error.code}: ${result.outcome.error.message}`
        : `cancelled: ${result.outcome.reason}`,
      result.turnId,
    );
  const output = result.output as JsonObject;
  const value =
    "agent" in target
      ? output[AGENT_STEP]
      : target.output !== undefined
        ? valueAt(output, target.output)
        : (lastOutput ?? output);
  const reply = replyText(value);
  const scores: ScoreResult[] = [];
  for (const spec of item.scorers)
    scores.push(
      await scoreReply(spec, {
        input: inputText(item.input),
        ...(item.expected !== undefined ? { expected: item.expected } : {}),
        reply,
        judge: run.judge,
        critics: run.critics,
        sessionId: session,
      }),
    );
  const score = scores.reduce((sum, one) => sum + one.score, 0) / scores.length;
  return { id: item.id, session, turn: result.turnId, reply, score, passed: scores.every((one) => one.passed), scores };
}

/**
 * Runs each case of `cases` (a dataset's text, JSONL or a JSON array, or its
 * cases) as a turn against `target`, each in its own session
 * `eval-<runId>-<case>` (kept on the tape), scores the replies and reports
 * per case and in aggregate. A case whose run fails, suspends or times out
 * scores 0 with its error; a dataset that is not one, a recipe the runner
 * refuses, an agent no worker hosts or no runner answering rejects the
 * whole run (InvalidRequestError, or the connection's error).
 *
 * @example
 * ```ts
 * import { connect, runEval } from "conclave/client";
 *
 * const client = await connect();
 * const report = await runEval(client, [{ input: "2+2?", expected: "4" }], { agent: "acme.math" });
 * console.log(report.score, report.passed);
 * await client.close();
 * ```
 */
export async function runEval(
  client: ConclaveClient,
  cases: string | readonly EvalCaseInput[],
  target: EvalTarget,
  options: EvalOptions = {},
): Promise<EvalReport> {
  const dataset = typeof cases === "string" ? parseDataset(cases) : parseDataset(JSON.stringify(cases));
  const runId = options.runId ?? randomBytes(4).toString("hex");
  if (!RUN_ID.test(runId)) throw new RangeError(`run id '${runId}': 1-16 characters of A-Z, a-z, 0-9, '_' or '-'`);
  const threshold = options.threshold ?? DEFAULT_EVAL_THRESHOLD;
  if (!(threshold >= 0 && threshold <= 1)) throw new RangeError(`threshold ${threshold}: a number from 0 to 1`);
  const concurrency = options.concurrency ?? 1;
  if (!Number.isInteger(concurrency) || concurrency < 1)
    throw new RangeError(`concurrency ${concurrency}: a whole number from 1`);
  const judge = options.judge ?? judgeFromEnv();
  const run = {
    runId,
    timeoutMs: options.timeoutMs ?? 120_000,
    inputKey: options.inputKey ?? "message",
    judge,
    // The critics scorer asks the critics the environment configures: the LLM-mode model's, else the offline ones.
    critics: backendFromEnv(),
  };
  const results: CaseResult[] = new Array(dataset.length);
  let next = 0;
  let done = 0;
  const lane = async () => {
    while (next < dataset.length) {
      const index = next++;
      const result = await runCase(client, dataset[index]!, target, run).catch((error: unknown) => {
        next = dataset.length; // the other lanes take no new case
        throw error;
      });
      results[index] = result;
      options.onCase?.(result, ++done, dataset.length);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, dataset.length) }, lane));
  const score = results.reduce((sum, one) => sum + one.score, 0) / results.length;
  return {
    run_id: runId,
    target: targetName(target),
    judge: judge.name,
    threshold,
    score,
    passed: score >= threshold,
    cases_passed: results.filter((one) => one.passed).length,
    cases_total: results.length,
    cases: results,
  };
}
