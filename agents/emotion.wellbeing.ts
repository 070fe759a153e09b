import { councilAnswers } from "../src/agents/councilAnswers.ts";
import { defineAgent, quietOutput } from "../src/agents/defineAgent.ts";
import { Contribution } from "../src/contracts/agent.ts";

/** Keeps an eye on the user's overall wellbeing, including good news worth sharing in. */
export default defineAgent({
  name: "emotion.wellbeing",
  agency: "emotion",
  description: "Tracks the user's wellbeing across turns.",
  priority: "MONITOR",
  triggers: ["vulnerability"],
  cooldownSeconds: 0,
  tokenBudget: 500,
  output: Contribution,
  ...councilAnswers({
    prompt:
      "You track the user's wellbeing. Claim how they are doing overall and propose how the reply can support it.",
    rules: ({ sensors, user_message }) => {
      const output = quietOutput();
      if (/\b(happy|glad|excited|great|good news|finally)\b/i.test(user_message)) {
        output.claims.push({ id: "user_doing_well", text: "The user shares something positive.", confidence: 0.7 });
        output.proposals.push({ kind: "say", text: "That's wonderful to hear!" });
        output.stance_delta.valence = 0.3;
      } else if (sensors.vulnerability > 0.3) {
        output.claims.push({
          id: "user_low",
          text: "The user's wellbeing seems low.",
          confidence: sensors.vulnerability,
        });
        output.proposals.push({ kind: "say", text: "What you're feeling makes sense." });
        output.stance_delta.valence = -0.1;
        output.stance_delta.warmth = 0.2;
      }
      return output;
    },
  }),
});
