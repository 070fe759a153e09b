import { councilAnswers } from "../src/agents/councilAnswers.ts";
import { defineAgent, quietOutput } from "../src/agents/defineAgent.ts";
import { Contribution } from "../src/contracts/agent.ts";

/** Reads stress and overwhelm; argues for a calm, grounding reply. */
export default defineAgent({
  name: "emotion.stress",
  agency: "emotion",
  description: "Assesses stress and what would ease it.",
  priority: "SCHEDULED",
  triggers: ["vulnerability"],
  cooldownSeconds: 0,
  tokenBudget: 500,
  output: Contribution,
  ...councilAnswers({
    prompt:
      "You assess the user's stress. Claim how stressed they seem and propose what the reply should do to ease it.",
    rules: ({ sensors, user_message, claims }) => {
      const output = quietOutput();
      const stressed = /\b(stress(ed)?|overwhelm(ed)?|anxious|pressure|deadline|too much)\b/i.test(user_message);
      if (stressed || sensors.vulnerability > 0.5) {
        output.claims.push({
          id: "user_stressed",
          text: "The user is under stress.",
          confidence: Math.max(sensors.vulnerability, 0.6),
        });
        output.proposals.push({ kind: "say", text: "One small next step is enough for now." });
        output.stance_delta.warmth = 0.2;
        output.stance_delta.caution = 0.1;
      }
      if (claims.some((claim) => claim.id === "signal_vulnerability")) output.supports.push("signal_vulnerability");
      return output;
    },
  }),
});
