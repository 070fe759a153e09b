import { z } from "zod";
import { type AgentDefinition, type AgentRunContext, defineAgent } from "../../src/agents/defineAgent.ts";

const Answer = z.object({ answer: z.string() });

/**
 * A support specialist: answers the message in its field, streaming the
 * answer on its `default` stream as it is written.
 */
export function specialist(
  field: "billing" | "technical" | "general",
  offline: string,
): AgentDefinition<typeof Answer> {
  return defineAgent({
    name: `support.${field}`,
    description: `Answers ${field} support questions.`,
    agency: "support",
    output: Answer,
    run: async ({ recipe, input, model, stream }: AgentRunContext) => {
      const message = String(recipe?.inputs.message ?? input.user_message);
      const answer = model
        ? await model.text({
            system: `You are a ${field} support specialist. Answer briefly and concretely.`,
            user: message,
            onDelta: (delta) => stream("default", delta),
          })
        : offline;
      if (!model) for (const word of answer.split(/(?<= )/)) stream("default", word);
      return { answer };
    },
  });
}
