import { z } from "zod";
import { defineAgent } from "../../src/agents/defineAgent.ts";

const Plan = z.object({
  actions: z.array(z.object({ tool: z.string(), args: z.record(z.string(), z.unknown()), why: z.string() })),
  confidence: z.number().min(0).max(1),
});

/** What the model is told it may plan: the recipe's one writing tool. The executor's policy still decides. */
const PLANNING_PROMPT = [
  "You plan an operator's next actions from findings about a machine.",
  'The only tool is sandbox_write, with args {"path": a relative path inside the sandbox, "content": the text to write}.',
  "Plan at most three actions, each with why. Plan none when the findings need no record.",
  "Give your confidence (0 to 1) that the plan is right; lower it when the findings are unsure.",
].join(" ");

/**
 * Operator pipeline, step 4 (plan): the actions to take, each a tool call, with the plan's confidence.
 * With a model, the model plans from the findings; offline, a deterministic rule writes them as a report.
 * Either way the executor's policy (approval, the confidence gate) judges each action.
 */
export const planner = defineAgent({
  name: "operator.planner",
  description: "Turns findings into a plan of tool calls: a report written to the sandbox.",
  agency: "operator",
  output: Plan,
  run: async ({ recipe, model }) => {
    const reasoning = recipe?.inputs.reasoning as { findings: string[]; confidence: number } | undefined;
    const findings = reasoning?.findings ?? [];
    if (model) {
      const planned = await model.structured({
        system: PLANNING_PROMPT,
        user: JSON.stringify({ findings, confidence: reasoning?.confidence ?? 0 }),
        schema: Plan,
        schemaName: "operator_plan",
      });
      // Never surer than the reasoning it plans from.
      return { ...planned, confidence: Math.min(planned.confidence, reasoning?.confidence ?? 0) };
    }
    if (findings.length === 0) return { actions: [], confidence: reasoning?.confidence ?? 0 };
    const content = `# System report\n\n${findings.map((finding) => `- ${finding}`).join("\n")}\n`;
    return {
      actions: [{ tool: "sandbox_write", args: { path: "reports/system.md", content }, why: "keep the findings" }],
      confidence: reasoning?.confidence ?? 0,
    };
  },
});
