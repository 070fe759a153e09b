import { z } from "zod";
import { defineAgent } from "../../src/agents/defineAgent.ts";

/**
 * Writes a short piece on a topic, streamed on `default`. Offline, a first
 * draft is one line; given an evaluator's feedback it adds the details asked
 * for (so a writer–judge loop converges).
 */
export const writer = defineAgent({
  name: "content.writer",
  description: "Writes a short piece on a topic, improving it on feedback.",
  agency: "content",
  output: z.object({ text: z.string() }),
  run: async ({ recipe, input, model, stream }) => {
    const topic = String(recipe?.inputs.topic ?? input.user_message);
    const feedback = recipe?.feedback;
    let text: string;
    if (model) {
      text = await model.text({
        system: `${recipe?.system_prompt ?? "Write a short, clear paragraph."} Address any feedback given.`,
        user: input.user_message,
        onDelta: (delta) => stream(delta),
      });
    } else {
      text = feedback
        ? `${topic}: an overview. Details: what it is, why it matters, and one example.`
        : `${topic}: an overview.`;
      for (const piece of text.split(/(?<= )/)) stream(piece);
    }
    return { text };
  },
});
