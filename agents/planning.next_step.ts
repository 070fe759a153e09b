import { defineAgent, quietOutput } from "../src/cognition/agentDefinition.ts";

/** Breaks what the user faces into the next small, doable step. */
export default defineAgent({
  manifest: {
    id: "planning.next_step",
    agency: "planning",
    priority: "SCHEDULED",
    triggers: ["advice_requested", "vulnerability"],
    cooldown_s: 20,
    token_budget: 500,
    description: "Proposes the next concrete step.",
  },
  prompt: "You plan. Propose the one next step the user could take, small enough to start now.",
  rules: ({ sensors, claims }) => {
    const output = quietOutput();
    const stressed = claims.some((claim) => claim.id === "user_stressed");
    if (sensors.advice_requested < 0.3 && !stressed) return output;
    output.proposals.push({ kind: "say", text: "Pick one small thing you can do in the next ten minutes." });
    if (stressed) output.supports.push("user_stressed");
    return output;
  },
});
