// A custom agent in plain JavaScript, joining the built-in council.
// `conclave up --agents ./agents.js` (npm start) serves it in a worker process of its own.
import { defineAgent } from "conclave/worker";
import { z } from "zod";

export const umbrella = defineAgent({
  name: "weather.umbrella",
  description: "Notices plans that depend on the weather and says whether to take an umbrella.",
  // ALWAYS_ON runs in every turn's first wave; SCHEDULED agents run when one of their `triggers` fires.
  priority: "ALWAYS_ON",
  tokenBudget: 200,
  output: z.object({
    mentions_weather: z.boolean(),
    advice: z.string(),
    // A field named as in the council contract: the council takes these proposals into its decision.
    proposals: z.array(z.object({ kind: z.enum(["say", "ask", "do_not"]), text: z.string() })).default([]),
  }),
  async run({ input, model, stream }) {
    stream("notes", `reading: ${input.user_message}`);
    if (model) {
      // With CONCLAVE_LLM_BASE_URL and CONCLAVE_LLM_MODEL set, the configured model answers.
      return model.structured({
        system: "Does the user's message depend on the weather? If so, advise on an umbrella in one short sentence.",
        user: input.user_message,
        schema: z.object({ mentions_weather: z.boolean(), advice: z.string() }),
      });
    }
    // The offline mode: a deterministic answer of its own.
    const rain = /\b(rain|storm|shower|umbrella)/i.test(input.user_message);
    return {
      mentions_weather: rain,
      advice: rain ? "Take an umbrella." : "No weather in sight.",
      proposals: rain ? [{ kind: "say", text: "Take an umbrella." }] : [],
    };
  },
});
