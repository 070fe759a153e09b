import { z } from "zod";
import { defineAgent } from "../../src/agents/defineAgent.ts";

/** Splits a research question into what to look up on the web and in papers. */
export const planner = defineAgent({
  name: "research.planner",
  description: "Plans a research question: what to look up where.",
  agency: "research",
  output: z.object({ web: z.string(), papers: z.string() }),
  run: async ({ recipe, input, model }) => {
    const question = String(recipe?.inputs.question ?? input.user_message);
    if (model)
      return model.structured({
        system: "Split the research question into one web query and one literature query.",
        user: question,
        schema: z.object({ web: z.string(), papers: z.string() }),
      });
    return { web: `recent news on ${question}`, papers: `surveys of ${question}` };
  },
});
