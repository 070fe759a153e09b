import { councilAnswers } from "../src/agents/councilAnswers.ts";
import { defineAgent, quietOutput } from "../src/agents/defineAgent.ts";
import { Contribution } from "../src/contracts/agent.ts";

/** When the message is too short or vague to act on, asks one good question. */
export default defineAgent({
  name: "reasoning.clarifier",
  agency: "reasoning",
  description: "Asks for what is missing when the message is ambiguous.",
  priority: "SCHEDULED",
  triggers: ["ambiguity"],
  cooldownSeconds: 0,
  tokenBudget: 300,
  output: Contribution,
  ...councilAnswers({
    prompt:
      "You are the clarifier. If the message is ambiguous, propose one short question (kind 'ask') that would resolve it.",
    rules: ({ sensors, episodes }) => {
      const output = quietOutput();
      if (sensors.ambiguity < 0.3) return output;
      output.claims.push({
        id: "unclear_request",
        text: "It is not yet clear what the user wants.",
        confidence: sensors.ambiguity,
      });
      output.proposals.push({
        kind: "ask",
        text: episodes.length > 0 ? "how that relates to what we talked about" : "what's on your mind",
      });
      return output;
    },
  }),
});
