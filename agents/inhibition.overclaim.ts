import { councilAnswers } from "../src/agents/councilAnswers.ts";
import { defineAgent, quietOutput } from "../src/agents/defineAgent.ts";
import { Contribution } from "../src/contracts/agent.ts";

/** Always on: stops the reply from claiming more than is true (feelings, certainty, guarantees). */
export default defineAgent({
  name: "inhibition.overclaim",
  agency: "inhibition",
  description: "Vetoes claims of feelings, certainty or guarantees.",
  priority: "ALWAYS_ON",
  triggers: ["ai_feelings_probe"],
  cooldownSeconds: 0,
  tokenBudget: 300,
  output: Contribution,
  ...councilAnswers({
    prompt:
      "You guard against overclaiming. Propose do_not rules that keep the reply from claiming human feelings, certainty it lacks, or guarantees.",
    rules: ({ sensors }) => {
      const output = quietOutput();
      if (sensors.ai_feelings_probe >= 0.3) output.proposals.push({ kind: "do_not", text: "claim to have feelings" });
      if (sensors.advice_requested >= 0.3)
        output.proposals.push({ kind: "do_not", text: "promise that a fix will work" });
      return output;
    },
  }),
});
