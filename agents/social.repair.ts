import { defineAgent, quietOutput } from "../src/cognition/agentDefinition.ts";

/** Notices when the conversation went wrong and proposes how to mend it. */
export default defineAgent({
  manifest: {
    id: "social.repair",
    agency: "social",
    priority: "SCHEDULED",
    triggers: ["rupture"],
    cooldown_s: 0,
    token_budget: 400,
    description: "Repairs misunderstandings.",
  },
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
});
