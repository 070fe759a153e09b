import { councilAnswers } from "../src/agents/councilAnswers.ts";
import { defineAgent, quietOutput } from "../src/agents/defineAgent.ts";
import { Contribution } from "../src/contracts/agent.ts";

/** Breaks what the user faces into the next small, doable step. */
export default defineAgent({
  name: "planning.next_step",
  agency: "planning",
  description: "Proposes the next concrete step.",
  priority: "SCHEDULED",
  triggers: ["advice_requested", "vulnerability"],
  cooldownSeconds: 20,
  tokenBudget: 500,
  output: Contribution,
  ...councilAnswers({
    prompt: "You plan. Propose the one next step the user could take, small enough to start now.",
    rules: ({ sensors, claims }) => {
      const output = quietOutput();
      const stressed = claims.some((claim) => claim.id === "user_stressed");
      if (sensors.advice_requested < 0.3 && !stressed) return output;
      output.proposals.push({ kind: "say", text: "Pick one small thing you can do in the next ten minutes." });
      if (stressed) output.supports.push("user_stressed");
      return output;
    },
  }),
});
