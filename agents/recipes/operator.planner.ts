import { z } from "zod";
import { defineAgent } from "../../src/agents/defineAgent.ts";

const Plan = z.object({
  actions: z.array(z.object({ tool: z.string(), args: z.record(z.string(), z.unknown()), why: z.string() })),
  confidence: z.number().min(0).max(1),
});

/** Operator pipeline, step 4 (plan): the actions to take, each a tool call, with the plan's confidence. */
export const planner = defineAgent({
  name: "operator.planner",
  description: "Turns findings into a plan of tool calls: a report written to the sandbox.",
  agency: "operator",
  output: Plan,
  run: async ({ recipe }) => {
    const reasoning = recipe?.inputs.reasoning as { findings: string[]; confidence: number } | undefined;
    const findings = reasoning?.findings ?? [];
    if (findings.length === 0) return { actions: [], confidence: reasoning?.confidence ?? 0 };
    const content = `# System report\n\n${findings.map((finding) => `- ${finding}`).join("\n")}\n`;
    return {
      actions: [{ tool: "sandbox_write", args: { path: "reports/system.md", content }, why: "keep the findings" }],
      confidence: reasoning?.confidence ?? 0,
    };
  },
});
