import { councilAnswers } from "../src/agents/councilAnswers.ts";
import { defineAgent, quietOutput } from "../src/agents/defineAgent.ts";
import { Contribution } from "../src/contracts/agent.ts";

/** Always on: notices which sensors fired and says what the turn is about. */
export default defineAgent({
  name: "monitoring.trigger_watcher",
  agency: "monitoring",
  description: "Names the strongest signals in the message.",
  priority: "ALWAYS_ON",
  triggers: [],
  cooldownSeconds: 0,
  tokenBudget: 300,
  output: Contribution,
  ...councilAnswers({
    prompt: "You watch the fast sensors. State, as claims, which signals in the user's message matter most this turn.",
    rules: ({ sensors }) => {
      const output = quietOutput();
      const strongest = Object.entries(sensors)
        .filter(([, value]) => value >= 0.3)
        .sort(([, a], [, b]) => b - a)
        .slice(0, 2);
      for (const [name, value] of strongest) {
        output.claims.push({
          id: `signal_${name}`,
          text: `The message shows ${name.replace(/_/g, " ")}.`,
          confidence: value,
        });
      }
      if (sensors.advice_requested >= 0.3)
        output.proposals.push({ kind: "say", text: "Let's look at the problem together." });
      if (sensors.ambiguity >= 0.3) output.proposals.push({ kind: "ask", text: "what's on your mind" });
      return output;
    },
  }),
});
