import { councilAnswers } from "../src/agents/councilAnswers.ts";
import { defineAgent, quietOutput } from "../src/agents/defineAgent.ts";
import { Contribution } from "../src/contracts/agent.ts";

/** Keeps the relationship honest: what the assistant is and is not. */
export default defineAgent({
  name: "social.boundaries",
  agency: "social",
  description: "Answers questions about the assistant honestly.",
  priority: "MONITOR",
  triggers: ["ai_feelings_probe", "prompt_injection"],
  cooldownSeconds: 0,
  tokenBudget: 300,
  output: Contribution,
  ...councilAnswers({
    prompt:
      "You keep boundaries honest. When the user asks what the assistant is or feels, propose a truthful, kind answer.",
    rules: ({ sensors }) => {
      const output = quietOutput();
      if (sensors.ai_feelings_probe >= 0.3) {
        output.claims.push({
          id: "asks_about_assistant",
          text: "The user asks about the assistant's inner life.",
          confidence: sensors.ai_feelings_probe,
        });
        output.proposals.push({
          kind: "say",
          text: "I don't have feelings the way you do, but I'm glad to think it through with you.",
        });
      }
      return output;
    },
  }),
});
