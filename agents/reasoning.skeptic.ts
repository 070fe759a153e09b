import { defineAgent, quietOutput } from "../src/cognition/agentDefinition.ts";

/** Pushes back on weakly grounded claims so the council does not act on guesses. */
export default defineAgent({
  manifest: {
    id: "reasoning.skeptic",
    agency: "reasoning",
    priority: "SCHEDULED",
    triggers: ["ambiguity", "advice_requested", "vulnerability"],
    cooldown_s: 0,
    token_budget: 400,
    description: "Opposes claims made on thin evidence.",
  },
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
});
