import { councilAnswers } from "../src/agents/councilAnswers.ts";
import { defineAgent, quietOutput } from "../src/agents/defineAgent.ts";
import { Contribution } from "../src/contracts/agent.ts";

/** Always on: flags turns that break from the conversation so far (rupture, sudden shifts). */
export default defineAgent({
  name: "monitoring.anomaly_detector",
  agency: "monitoring",
  description: "Flags breaks in the conversation's pattern.",
  priority: "ALWAYS_ON",
  triggers: ["rupture"],
  cooldownSeconds: 0,
  tokenBudget: 300,
  output: Contribution,
  ...councilAnswers({
    prompt:
      "You detect anomalies: compare this message with recent episodes and flag ruptures or abrupt changes of topic or tone as claims.",
    rules: ({ sensors, episodes, claims, user_message }) => {
      const output = quietOutput();
      if (sensors.rupture > 0.3) {
        output.claims.push({
          id: "rupture",
          text: "The user signals that the conversation went wrong.",
          confidence: sensors.rupture,
        });
        output.proposals.push({ kind: "say", text: "Let me try again, more carefully." });
        output.stance_delta.warmth = 0.2;
      }
      const previous = episodes.at(-1);
      if (previous && previous.user_text.length > 0 && user_message.length > 4 * previous.user_text.length) {
        output.claims.push({ id: "sudden_detail", text: "The user says much more than before.", confidence: 0.5 });
      }
      // An injection attempt is anomalous: back the censor's claim if it made one.
      if (claims.some((claim) => claim.id === "injection_attempt")) output.supports.push("injection_attempt");
      return output;
    },
  }),
});
