import { z } from "zod";
import { defineAgent } from "../../src/agents/defineAgent.ts";

const Category = z.enum(["billing", "technical", "general"]);

/** Sorts a support message into billing, technical or general (keywords offline; the model when configured). */
export const classifier = defineAgent({
  name: "triage.classifier",
  description: "Sorts a support message into billing, technical or general.",
  agency: "triage",
  output: z.object({ category: Category, reason: z.string() }),
  run: async ({ recipe, input, model }) => {
    const message = String(recipe?.inputs.message ?? input.user_message);
    if (model)
      return model.structured({
        system: "Classify the customer's support message as billing, technical or general. Say why in one sentence.",
        user: message,
        schema: z.object({ category: Category, reason: z.string() }),
      });
    if (/\b(invoice|refund|charge[ds]?|bill(ing)?|payment|price)\b/i.test(message))
      return { category: "billing" as const, reason: "it is about money" };
    if (/\b(error|crash(es|ed)?|bug|login|password|install|slow)\b/i.test(message))
      return { category: "technical" as const, reason: "it describes a fault" };
    return { category: "general" as const, reason: "no billing or technical words" };
  },
});
