import type { JsonObject } from "../contracts/recipeRun.ts";

/** Longest prompt text an agent node sends (its inputs, rendered), in characters. */
export const MAX_PROMPT_CHARS = 16_000;

const render = (value: unknown): string => (typeof value === "string" ? value : JSON.stringify(value));

/**
 * The text an agent node gives its agent as the user's message: a lone
 * string input as it is, several inputs one per line (`name: value`), and
 * an evaluator's critique of the previous attempt after them, so a
 * generator's next attempt carries its feedback.
 */
export function agentPrompt(inputs: JsonObject, feedback?: string): string {
  const entries = Object.entries(inputs).filter(([, value]) => value !== undefined);
  const only = entries.length === 1 ? entries[0]![1] : undefined;
  const body = typeof only === "string" ? only : entries.map(([name, value]) => `${name}: ${render(value)}`).join("\n");
  const text = feedback ? `${body}\n\nFeedback on your previous answer (address it):\n${feedback}` : body;
  return text.length > MAX_PROMPT_CHARS ? text.slice(0, MAX_PROMPT_CHARS) : text;
}
