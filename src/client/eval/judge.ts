/**
 * The `llm_judge` scorer's judge: the configured model grading a reply against
 * a rubric (through the `openai` client, as every LLM-mode call), or, in the
 * offline mode, a deterministic judge that checks the rubric's terms.
 */
import { z } from "zod";
import type { ChatModel } from "../../contracts/model.ts";
import { createChatModel, llmConfigFromEnv } from "../../llm/index.ts";

/** What the judge is asked: the case's input, what a good reply is (when the case says), the reply, the rubric. */
export interface JudgeRequest {
  input: string;
  expected?: string;
  reply: string;
  rubric: string;
  signal?: AbortSignal;
}

/** A judge's grade: from 0 (fails the rubric) to 1 (meets it fully), and why. */
export interface JudgeVerdict {
  score: number;
  reason: string;
}

/** Grades replies against rubrics: `name` is the model id, or `offline`. */
export interface Judge {
  readonly name: string;
  /** Grades one reply against its rubric; a rejection scores the case's scorer 0, with the error. */
  grade(request: JudgeRequest): Promise<JudgeVerdict>;
}

/** The structured answer the model is asked for. */
export const JudgeAnswer = z.object({ score: z.number().min(0).max(1), reason: z.string().max(2_000) });

/** The json_schema name of the judge's structured output. */
export const JUDGE_SCHEMA_NAME = "eval_judge";

/** The model as a judge: one structured call per reply, the score and reason it gives. */
export function modelJudge(model: ChatModel): Judge {
  return {
    name: model.model,
    grade: async ({ input, expected, reply, rubric, signal }) => {
      const { value } = await model.structured({
        caller: "eval:llm_judge",
        system: `You grade an assistant's reply against a rubric. Answer with one JSON object: {"score": 0.0-1.0, "reason": "one sentence"}. 1 meets the rubric fully, 0 not at all.
Rubric: ${rubric}`,
        user: JSON.stringify({ input, ...(expected !== undefined ? { expected } : {}), reply }),
        schema: JudgeAnswer,
        schemaName: JUDGE_SCHEMA_NAME,
        ...(signal ? { signal } : {}),
      });
      return value;
    },
  };
}

/** Words too common to say anything about a reply. */
const STOPWORDS = new Set(
  "about above after again also answer because been before being both could does doing each from have having into just more most must only other over reply same should some such than that their them then there these they this those through under very were what when where which while with would your".split(
    " ",
  ),
);

/**
 * The terms the offline judge looks for: the rubric's quoted phrases ("…" or
 * '…') when it has any, else its words of four letters or more that are not
 * common ones, lowercased, each once.
 */
export function rubricTerms(rubric: string): string[] {
  const quoted = [...rubric.matchAll(/"([^"]+)"|'([^']+)'/g)].map((match) => (match[1] ?? match[2])!.toLowerCase());
  if (quoted.length > 0) return [...new Set(quoted)];
  const words = rubric.toLowerCase().match(/[\p{L}\p{N}]{4,}/gu) ?? [];
  return [...new Set(words.filter((word) => !STOPWORDS.has(word)))];
}

/**
 * The offline mode's judge, deterministic: the score is the share of the
 * rubric's terms (rubricTerms) the reply contains, ignoring case; a rubric
 * without terms scores a non-empty reply 1.
 */
export const offlineJudge: Judge = {
  name: "offline",
  grade: async ({ reply, rubric }) => {
    const terms = rubricTerms(rubric);
    const text = reply.toLowerCase();
    if (terms.length === 0)
      return { score: text.trim() === "" ? 0 : 1, reason: "the rubric names no terms: any reply passes" };
    const missing = terms.filter((term) => !text.includes(term));
    const score = (terms.length - missing.length) / terms.length;
    return {
      score,
      reason:
        missing.length === 0
          ? `has every term of the rubric (${terms.length})`
          : `misses ${missing.map((term) => `'${term}'`).join(", ")}`,
    };
  },
};

/**
 * The judge the environment configures: the model of LLM mode
 * (`OPENAI_API_KEY`, `CONCLAVE_LLM_*`: docs/agents.md), else the offline judge.
 * A half-set configuration throws LlmConfigError naming the variable.
 */
export function judgeFromEnv(env: NodeJS.ProcessEnv = process.env): Judge {
  const config = llmConfigFromEnv(env);
  return config ? modelJudge(createChatModel(config)) : offlineJudge;
}
