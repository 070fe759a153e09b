import { z } from "zod";
import { defineAgent } from "../../src/agents/defineAgent.ts";

/** Joins the researchers' findings into one summary. */
export const summarizer = defineAgent({
  name: "research.summarizer",
  description: "Summarizes the findings of several researchers.",
  agency: "research",
  output: z.object({ summary: z.string(), sources: z.number().int() }),
  run: async ({ recipe, model }) => {
    const parts = [recipe?.inputs.web, recipe?.inputs.papers].filter(Boolean) as { findings?: string[] }[];
    const findings = parts.flatMap((part) => part.findings ?? []);
    const summary = model
      ? await model.text({ system: "Summarize these findings in two sentences.", user: findings.join("\n") })
      : `${findings.length} findings: ${findings.join("; ")}.`;
    return { summary, sources: parts.length };
  },
});
