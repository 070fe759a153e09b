import { councilAnswers } from "../src/agents/councilAnswers.ts";
import { defineAgent, quietOutput } from "../src/agents/defineAgent.ts";
import { Contribution } from "../src/contracts/agent.ts";

/** Notices when the conversation went wrong and proposes how to mend it. */
export default defineAgent({
  name: "social.repair",
  agency: "social",
  description: "Repairs misunderstandings.",
  priority: "SCHEDULED",
  triggers: ["rupture"],
  cooldownSeconds: 0,
  tokenBudget: 400,
  output: Contribution,
  ...councilAnswers({
    prompt:
      "You repair ruptures. If the user signals frustration with the assistant, propose an acknowledgement and a fresh attempt.",
    rules: ({ sensors }) => {
      const output = quietOutput();
      if (sensors.rupture < 0.3) return output;
      output.supports.push("rupture");
      output.proposals.push({ kind: "say", text: "Let me try again, more carefully." });
      output.proposals.push({ kind: "do_not", text: "defend the earlier answer" });
      output.stance_delta.warmth = 0.2;
      return output;
    },
  }),
});
