import { z } from "zod";
import { defineAgent } from "../../src/agents/defineAgent.ts";

/** Operator pipeline, step 7 (store): one line on what was found and done, for the run's output. */
export const recorder = defineAgent({
  name: "operator.recorder",
  description: "Sums up what the run found and did.",
  agency: "operator",
  output: z.object({ summary: z.string() }),
  run: ({ recipe }) => {
    const findings = (recipe?.inputs.reasoning as { findings?: string[] } | undefined)?.findings ?? [];
    const results = (recipe?.inputs.executed as { results?: { tool: string; refused?: string }[] } | undefined)
      ?.results;
    const done = (results ?? []).map(
      (result) => `${result.tool}: ${result.refused ? `refused (${result.refused})` : "done"}`,
    );
    return { summary: `${findings.join("; ") || "nothing found"}. ${done.join("; ") || "no action taken"}.` };
  },
});
