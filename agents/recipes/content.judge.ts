import { z } from "zod";
import { defineAgent } from "../../src/agents/defineAgent.ts";

const Verdict = z.object({ score: z.number().min(0).max(1), critique: z.string() });

/** Scores a piece of writing from 0 to 1 with a critique (an LLM judge, or a fixed rubric offline). */
export const judge = defineAgent({
  name: "content.judge",
  description: "Scores writing from 0 to 1 and says what to improve.",
  agency: "content",
  output: Verdict,
  run: async ({ recipe, model }) => {
    const target = recipe?.inputs.target as { text?: unknown } | string | undefined;
    const text = typeof target === "string" ? target : String(target?.text ?? "");
    if (model)
      return model.structured({
        system: `Score the text from 0 to 1 against these criteria: ${JSON.stringify(recipe?.inputs.criteria)}. Critique it in one sentence.`,
        user: text,
        schema: Verdict,
      });
    return text.includes("Details:")
      ? { score: 0.9, critique: "Clear, with details and an example." }
      : { score: 0.4, critique: "Too thin: add details and one example." };
  },
});
