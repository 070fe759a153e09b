import { councilAnswers } from "../src/agents/councilAnswers.ts";
import { defineAgent, hasClaim, quietOutput } from "../src/agents/defineAgent.ts";
import { Contribution } from "../src/contracts/agent.ts";

/** Turns a request for help into a concrete problem to work on. */
export default defineAgent({
  name: "reasoning.analyst",
  agency: "reasoning",
  description: "Frames the user's problem and what to find out first.",
  priority: "SCHEDULED",
  triggers: ["advice_requested"],
  cooldownSeconds: 0,
  tokenBudget: 600,
  output: Contribution,
  ...councilAnswers({
    prompt:
      "You are the analyst. If the user brings a problem, state it as a claim, and propose the single most useful question or step to narrow it down.",
    rules: ({ sensors, user_message, claims }) => {
      const output = quietOutput();
      if (sensors.advice_requested < 0.3) return output;
      output.claims.push({
        id: "concrete_problem",
        text: "The user has a concrete problem to solve.",
        confidence: sensors.advice_requested,
      });
      const technical = /\b(bug|error|build|code|crash|broken|test)\b/i.test(user_message);
      output.proposals.push({
        kind: "say",
        text: technical ? "What changed right before it broke?" : "Let's pin down what outcome you need first.",
      });
      if (hasClaim(claims, "signal_advice_requested")) output.supports.push("signal_advice_requested");
      output.stance_delta.curiosity = 0.2;
      return output;
    },
  }),
});
