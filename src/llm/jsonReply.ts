import type { z } from "zod";
import { describeIssues } from "../contracts/issues.ts";

export type ReplyCheck<T> = { ok: true; value: T } | { ok: false; problem: string };

const THINK_BLOCK = /^\s*<think>[\s\S]*?<\/think>/;
const FENCED = /^\s*```(?:json)?\s*\n?([\s\S]*?)\n?\s*```\s*$/i;
const MAX_PROBLEM_CHARS = 600;

/**
 * Parses a model's reply as JSON and validates it. Tolerates what small local models add around
 * the JSON: a leading `<think>…</think>` block and a ```json fence.
 */
export function checkJsonReply<S extends z.ZodType>(
  content: string | null | undefined,
  schema: S,
): ReplyCheck<z.infer<S>> {
  if (!content?.trim()) return { ok: false, problem: "the reply was empty" };
  const text = unwrap(content);
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    return { ok: false, problem: `the reply is not valid JSON (${(error as Error).message})` };
  }
  const result = schema.safeParse(json);
  if (result.success) return { ok: true, value: result.data };
  return { ok: false, problem: `the JSON does not match the schema: ${describeIssues(result.error, { join: "; " })}` };
}

/** The user message for the second attempt: the original, then what was wrong with the first reply. */
export function withCorrection(user: string, problem: string): string {
  const shortProblem = problem.length > MAX_PROBLEM_CHARS ? `${problem.slice(0, MAX_PROBLEM_CHARS)}…` : problem;
  return `${user}\n\nYour previous reply was rejected: ${shortProblem}\nReply with only a JSON object that matches the schema.`;
}

function unwrap(content: string): string {
  const withoutThinking = content.replace(THINK_BLOCK, "");
  return (FENCED.exec(withoutThinking)?.[1] ?? withoutThinking).trim();
}
