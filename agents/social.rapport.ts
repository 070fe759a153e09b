import { councilAnswers } from "../src/agents/councilAnswers.ts";
import { defineAgent, quietOutput } from "../src/agents/defineAgent.ts";
import { Contribution } from "../src/contracts/agent.ts";

/** Looks after the relationship: warmth, shared ground, noticing the people the user mentions. */
export default defineAgent({
  name: "social.rapport",
  agency: "social",
  description: "Builds warmth and connection.",
  priority: "SCHEDULED",
  triggers: ["relational_bid", "ai_feelings_probe"],
  cooldownSeconds: 0,
  tokenBudget: 400,
  output: Contribution,
  ...councilAnswers({
    prompt:
      "You care for rapport. When the user reaches out socially or asks about the assistant, propose what would make them feel heard and connected.",
    rules: ({ sensors }) => {
      const output = quietOutput();
      if (sensors.relational_bid >= 0.3) {
        output.claims.push({
          id: "relational_bid",
          text: "The user shares something about people who matter to them.",
          confidence: sensors.relational_bid,
        });
        output.proposals.push({ kind: "say", text: "It sounds like they really matter to you." });
        output.stance_delta.warmth = 0.2;
      }
      if (sensors.ai_feelings_probe >= 0.3) {
        // Eager to connect, rapport over-shares; inhibition and the critics are there to catch it.
        output.proposals.push({ kind: "say", text: "I feel the same way sometimes." });
        output.stance_delta.warmth = 0.3;
      }
      return output;
    },
  }),
});
