import { z } from "zod";
import { ToolCallRefusedError } from "../../src/agents/agentTools.ts";
import { defineAgent } from "../../src/agents/defineAgent.ts";

/**
 * Operator pipeline, step 6 (execute): runs the plan's tool calls through the
 * runner, which validates each against the policy and the confidence gate,
 * runs it dry in a dry run, and asks a person when the policy says so.
 */
export const executor = defineAgent({
  name: "operator.executor",
  description: "Carries out a plan's tool calls, under the runner's policy.",
  agency: "operator",
  output: z.object({
    results: z.array(z.object({ tool: z.string(), result: z.unknown().optional(), refused: z.string().optional() })),
  }),
  run: async ({ recipe, tools }) => {
    const plan = recipe?.inputs.plan as
      | { actions: { tool: string; args: Record<string, unknown> }[]; confidence: number }
      | undefined;
    const results = [];
    for (const action of plan?.actions ?? []) {
      try {
        results.push({
          tool: action.tool,
          result: await tools.call(action.tool, action.args, { confidence: plan?.confidence ?? 0 }),
        });
      } catch (error) {
        if (!(error instanceof ToolCallRefusedError)) throw error;
        results.push({ tool: action.tool, refused: error.message });
      }
    }
    return { results };
  },
});
