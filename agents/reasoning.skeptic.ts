import { councilAnswers } from "../src/agents/councilAnswers.ts";
import { defineAgent, quietOutput } from "../src/agents/defineAgent.ts";
import { Contribution } from "../src/contracts/agent.ts";

/** Pushes back on weakly grounded claims so the council does not act on guesses. */
export default defineAgent({
  name: "reasoning.skeptic",
  agency: "reasoning",
  description: "Opposes claims made on thin evidence.",
  priority: "SCHEDULED",
  triggers: ["ambiguity", "advice_requested", "vulnerability"],
  cooldownSeconds: 0,
  tokenBudget: 400,
  output: Contribution,
  ...councilAnswers({
    prompt:
      "You are the skeptic. Oppose (by id) claims in the workspace that rest on thin evidence, and say why in a claim of your own. In a revision round, stop opposing claims most agents support.",
    rules: ({ claims }) => {
      const output = quietOutput();
      const weak = claims.filter((claim) => claim.confidence < 0.55 && claim.source !== "reasoning.skeptic");
      for (const claim of weak.slice(0, 3)) output.opposes.push(claim.id);
      if (weak.length > 0) {
        output.claims.push({
          id: "thin_evidence",
          text: "Some conclusions rest on very little evidence.",
          confidence: 0.5,
        });
        output.stance_delta.caution = 0.1;
      }
      return output;
    },
  }),
});
