/**
 * An eval dataset: the cases `runEval` runs, each a turn's input with what a
 * good answer is and the scorers that judge it (docs/evals.md). Read from
 * JSONL (one case a line) or a JSON array; every problem is one line naming
 * the line or case it is in.
 */
import { z } from "zod";
import { CRITIC_NAMES } from "../../cognition/critics.ts";
import { describeIssues } from "../../contracts/issues.ts";
import { InvalidRequestError, messageOf } from "../../errors.ts";
import { fromRecipeJsonSchema } from "../../recipes/jsonSchema.ts";

/** `exact`: the reply equals `expected` (or the case's), after trimming; `ignore_case` compares lowercased. */
export const ExactScorer = z.strictObject({
  type: z.literal("exact"),
  expected: z.string().optional(),
  ignore_case: z.boolean().default(false),
});

/** `contains`: the reply contains `expected` (the case's, or each of a list here); `ignore_case` by default. */
export const ContainsScorer = z.strictObject({
  type: z.literal("contains"),
  expected: z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]).optional(),
  ignore_case: z.boolean().default(true),
});

/** `json_schema`: the reply parsed as JSON is valid against `schema` (a JSON Schema object). */
export const JsonSchemaScorer = z.strictObject({
  type: z.literal("json_schema"),
  schema: z.record(z.string(), z.unknown()),
});

/** `llm_judge`: the model grades the reply against `rubric`, from 0 to 1; it passes at `pass` or above. */
export const LlmJudgeScorer = z.strictObject({
  type: z.literal("llm_judge"),
  rubric: z.string().min(1).max(4_000),
  pass: z.number().min(0).max(1).default(0.5),
});

/** `critics`: Conclave's critics judge the reply against a speech act; the score is their mean score. */
export const CriticsScorer = z.strictObject({
  type: z.literal("critics"),
  /** Which critics judge (default all: safety, do_not, coherence, length). */
  critics: z.array(z.string().min(1)).min(1).optional(),
  /** The intent the reply should carry out (coherence), e.g. `support`, `advise`, `inform`. */
  intent: z.string().min(1).max(60).default("inform"),
  /** Rules the reply must not break (do_not). */
  do_not: z.array(z.string().min(1).max(400)).max(8).default([]),
});

/** One way of scoring a case's reply. */
export const ScorerSpec = z.discriminatedUnion("type", [
  ExactScorer,
  ContainsScorer,
  JsonSchemaScorer,
  LlmJudgeScorer,
  CriticsScorer,
]);
export type ScorerSpec = z.infer<typeof ScorerSpec>;
/** A scorer as a dataset writes it: the defaults (`ignore_case`, `pass`, `intent`…) may be left out. */
export type ScorerInput = z.input<typeof ScorerSpec>;

/** Characters a case id may have: it names the case's session (`eval-<run>-<case>`). */
const CASE_ID = /^[A-Za-z0-9_-]{1,40}$/;

/** One case of a dataset. */
export const EvalCase = z.strictObject({
  /** Names the case in the report and its session; default its position, `1`, `2`… */
  id: z.string().regex(CASE_ID, "id must be 1-40 characters of A-Z, a-z, 0-9, '_' or '-'").optional(),
  /** The turn's input: a message, or a recipe's inputs as an object. */
  input: z.union([z.string().min(1), z.record(z.string(), z.unknown())], {
    error: "input must be the message (a non-empty string) or the inputs (an object)",
  }),
  /** What a good reply is, for `exact` and `contains` (and shown to the judge). */
  expected: z.string().optional(),
  /** How the reply is scored; default `exact` when `expected` is given, else `critics`. */
  scorers: z.array(ScorerSpec).min(1).max(10).optional(),
});
export type EvalCase = z.infer<typeof EvalCase>;
/** A case as a dataset writes it (EvalCase checks it): see docs/evals.md. */
export interface EvalCaseInput {
  /** Names the case and its session: 1-40 of A-Z a-z 0-9 _ -. Default its position. */
  id?: string;
  /** A message, or a recipe's inputs. */
  input: string | Record<string, unknown>;
  /** What a good reply is, for `exact` and `contains`. */
  expected?: string;
  /** Default `exact` when `expected` is given, else `critics`. */
  scorers?: ScorerInput[];
}

/** A case with its id settled and its scorers chosen. */
export interface DatasetCase {
  id: string;
  input: string | Record<string, unknown>;
  expected?: string;
  scorers: ScorerSpec[];
}

/** Most cases a dataset may hold. */
export const MAX_CASES = 10_000;

/** The scorers of a case that names none: `exact` against its `expected`, else the critics. */
export function defaultScorers(expected: string | undefined): ScorerSpec[] {
  return [expected === undefined ? CriticsScorer.parse({ type: "critics" }) : ExactScorer.parse({ type: "exact" })];
}

/** What is wrong with a scorer its schema cannot tell: a JSON Schema that does not compile, a critic that is none. */
function scorerProblem(scorer: ScorerSpec): string | undefined {
  if (scorer.type === "json_schema") {
    try {
      fromRecipeJsonSchema(scorer.schema);
    } catch (error) {
      return `schema is not a usable JSON Schema: ${messageOf(error)}`;
    }
  }
  if (scorer.type === "critics") {
    const unknown = (scorer.critics ?? []).filter((name) => !CRITIC_NAMES.includes(name));
    if (unknown.length > 0)
      return `no critic ${unknown.map((name) => `'${name}'`).join(", ")}; the critics are: ${CRITIC_NAMES.join(", ")}`;
  }
  return undefined;
}

/** A case checked, its id settled (`1`, `2`… by position when it has none) and its scorers chosen. */
function settle(value: unknown, index: number, where: string): DatasetCase {
  const parsed = EvalCase.safeParse(value);
  if (!parsed.success)
    throw new InvalidRequestError(`${where}: ${describeIssues(parsed.error, { limit: 3, join: "; ", root: "case" })}`);
  const { id, input, expected, scorers } = parsed.data;
  for (const [at, scorer] of (scorers ?? []).entries()) {
    const problem = scorerProblem(scorer);
    if (problem) throw new InvalidRequestError(`${where}: scorers.${at}: ${problem}`);
  }
  return {
    id: id ?? String(index + 1),
    input,
    ...(expected !== undefined ? { expected } : {}),
    scorers: scorers ?? defaultScorers(expected),
  };
}

/**
 * The cases of a dataset's text: a JSON array of cases, or JSONL (one case a
 * line; blank lines and lines starting with `//` are skipped). Throws
 * InvalidRequestError (one line, naming the line or case) for text that is
 * not JSON, a case that is not one, two cases with one id, or no case at all.
 */
export function parseDataset(text: string, source = "dataset"): DatasetCase[] {
  const cases: DatasetCase[] = [];
  if (text.trimStart().startsWith("[")) {
    let values: unknown;
    try {
      values = JSON.parse(text);
    } catch (error) {
      throw new InvalidRequestError(`${source}: not a JSON array of cases: ${(error as Error).message}`);
    }
    if (!Array.isArray(values)) throw new InvalidRequestError(`${source}: not a JSON array of cases`);
    for (const [index, value] of values.entries()) cases.push(settle(value, index, `${source}: case ${index + 1}`));
  } else {
    text.split(/\r?\n/).forEach((line, index) => {
      const trimmed = line.trim();
      if (trimmed === "" || trimmed.startsWith("//")) return;
      let value: unknown;
      try {
        value = JSON.parse(trimmed);
      } catch (error) {
        throw new InvalidRequestError(`${source}, line ${index + 1}: not JSON: ${(error as Error).message}`);
      }
      cases.push(settle(value, cases.length, `${source}, line ${index + 1}`));
    });
  }
  if (cases.length === 0)
    throw new InvalidRequestError(`${source}: no cases (JSONL, one case a line, or a JSON array)`);
  if (cases.length > MAX_CASES) throw new InvalidRequestError(`${source}: ${cases.length} cases, at most ${MAX_CASES}`);
  const seen = new Set<string>();
  for (const { id } of cases) {
    if (seen.has(id)) throw new InvalidRequestError(`${source}: two cases have the id '${id}'`);
    seen.add(id);
  }
  return cases;
}
