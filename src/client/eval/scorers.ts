/**
 * The scorers of an eval case (docs/evals.md): each turns a reply into a
 * score from 0 to 1 and a pass or fail, with a line saying why.
 */

import type { CognitionBackend } from "../../cognition/backend.ts";
import { CRITIC_NAMES, collectVerdict, verdictPassed } from "../../cognition/critics.ts";
import type { CriticRequest } from "../../contracts/critic.ts";
import { describeIssues } from "../../contracts/issues.ts";
import { messageOf } from "../../errors.ts";
import { fromRecipeJsonSchema } from "../../recipes/jsonSchema.ts";
import type { ScorerSpec } from "./dataset.ts";
import type { Judge } from "./judge.ts";

/** What one scorer made of a reply. */
export interface ScoreResult {
  /** The scorer's type: `exact`, `contains`, `json_schema`, `llm_judge` or `critics`. */
  scorer: ScorerSpec["type"];
  /** From 0 to 1. */
  score: number;
  passed: boolean;
  /** Why, in one line. */
  detail: string;
}

/** What a scorer is given: the case, its reply, and the judges the model ones ask. */
export interface ScoringContext {
  /** The case's input as text (a recipe's inputs as JSON). */
  input: string;
  expected?: string;
  reply: string;
  /** The llm_judge scorer's judge. */
  judge: Judge;
  /** Whose critics the critics scorer asks (the offline ones, or the model's). */
  critics: CognitionBackend;
  /** Names the critic requests' session (`critics` only). */
  sessionId: string;
  signal?: AbortSignal;
}

const result = (scorer: ScorerSpec["type"], score: number, detail: string, passed = score >= 1): ScoreResult => ({
  scorer,
  score,
  passed,
  detail,
});

/** A value shortened for a detail line. */
const quote = (text: string, max = 60): string => JSON.stringify(text.length > max ? `${text.slice(0, max)}…` : text);

/** `exact`: the trimmed reply equals the expected text. */
function exact(spec: Extract<ScorerSpec, { type: "exact" }>, context: ScoringContext): ScoreResult {
  const expected = spec.expected ?? context.expected;
  if (expected === undefined) return result("exact", 0, "no expected text: give the case or the scorer `expected`");
  const fold = (text: string) => (spec.ignore_case ? text.trim().toLowerCase() : text.trim());
  return fold(context.reply) === fold(expected)
    ? result("exact", 1, "the reply is the expected text")
    : result("exact", 0, `expected ${quote(expected)}, got ${quote(context.reply)}`);
}

/** `contains`: the share of the expected texts the reply contains; it passes with all of them. */
function contains(spec: Extract<ScorerSpec, { type: "contains" }>, context: ScoringContext): ScoreResult {
  const wanted = spec.expected ?? context.expected;
  if (wanted === undefined) return result("contains", 0, "no expected text: give the case or the scorer `expected`");
  const texts = typeof wanted === "string" ? [wanted] : wanted;
  const fold = (text: string) => (spec.ignore_case ? text.toLowerCase() : text);
  const missing = texts.filter((text) => !fold(context.reply).includes(fold(text)));
  return missing.length === 0
    ? result("contains", 1, texts.length === 1 ? `contains ${quote(texts[0]!)}` : `contains all ${texts.length}`)
    : result(
        "contains",
        (texts.length - missing.length) / texts.length,
        `misses ${missing.map((text) => quote(text)).join(", ")}`,
      );
}

/** `json_schema`: the reply is JSON, valid against the schema (as recipes check theirs). */
function jsonSchema(spec: Extract<ScorerSpec, { type: "json_schema" }>, context: ScoringContext): ScoreResult {
  let value: unknown;
  try {
    value = JSON.parse(context.reply);
  } catch {
    return result("json_schema", 0, `the reply is not JSON: ${quote(context.reply)}`);
  }
  const checked = fromRecipeJsonSchema(spec.schema).safeParse(value);
  return checked.success
    ? result("json_schema", 1, "valid against the schema")
    : result("json_schema", 0, describeIssues(checked.error, { limit: 3, join: "; " }));
}

/** `llm_judge`: the judge's grade; it passes at `pass` or above. */
async function llmJudge(spec: Extract<ScorerSpec, { type: "llm_judge" }>, context: ScoringContext) {
  const { input, expected, reply, judge, signal } = context;
  const verdict = await judge.grade({
    input,
    ...(expected !== undefined ? { expected } : {}),
    reply,
    rubric: spec.rubric,
    ...(signal ? { signal } : {}),
  });
  return result("llm_judge", verdict.score, `${judge.name}: ${verdict.reason}`, verdict.score >= spec.pass);
}

/**
 * `critics`: each named critic judges the reply against the speech act
 * (`intent`, `do_not`), as they judge a turn's; the score is their mean, a
 * critic that could not judge counting 0, and it passes when every one passed.
 */
async function critics(spec: Extract<ScorerSpec, { type: "critics" }>, context: ScoringContext) {
  const names = spec.critics ?? CRITIC_NAMES;
  const request: CriticRequest = {
    session_id: context.sessionId,
    turn_id: 1,
    user_message: context.input,
    response: context.reply,
    speech_act: { intent: spec.intent, key_points: [], do_not: spec.do_not },
    attempt: 1,
  };
  const signal = context.signal ?? new AbortController().signal;
  const verdict = await collectVerdict(names, request, (name) => context.critics.judge(name, request, signal));
  const scores = [...verdict.results.map((one) => one.score), ...verdict.failures.map(() => 0)];
  const score = scores.reduce((sum, one) => sum + one, 0) / Math.max(1, scores.length);
  const failed = [
    ...verdict.results.filter((one) => !one.passed).map((one) => `${one.critic}: ${one.feedback}`),
    ...verdict.failures.map((one) => `${one.critic} could not judge: ${one.message}`),
  ];
  const passed = verdictPassed(verdict.results) && verdict.failures.length === 0;
  return result("critics", score, failed.length === 0 ? `passed ${names.join(", ")}` : failed.join("; "), passed);
}

/**
 * Scores a reply with one scorer. A judge or critic that fails (the model
 * down, a critic unknown) gives score 0, its error as the detail: never a throw.
 */
export async function scoreReply(spec: ScorerSpec, context: ScoringContext): Promise<ScoreResult> {
  try {
    switch (spec.type) {
      case "exact":
        return exact(spec, context);
      case "contains":
        return contains(spec, context);
      case "json_schema":
        return jsonSchema(spec, context);
      case "llm_judge":
        return await llmJudge(spec, context);
      case "critics":
        return await critics(spec, context);
    }
  } catch (error) {
    return result(spec.type, 0, `the scorer failed: ${messageOf(error)}`);
  }
}
