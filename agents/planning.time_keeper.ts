import { councilAnswers } from "../src/agents/councilAnswers.ts";
import { defineAgent, quietOutput } from "../src/agents/defineAgent.ts";
import { Contribution } from "../src/contracts/agent.ts";

const DEADLINE = /\b(deadline|due|tomorrow|tonight|today|urgent|asap|hours? left)\b/i;

/** Notices time pressure and keeps the reply focused on what is due. */
export default defineAgent({
  name: "planning.time_keeper",
  agency: "planning",
  description: "Tracks deadlines and time pressure.",
  priority: "MONITOR",
  triggers: [],
  cooldownSeconds: 60,
  tokenBudget: 300,
  output: Contribution,
  ...councilAnswers({
    prompt:
      "You keep time. If the user is under a deadline, claim it and propose keeping the reply focused on what is due.",
    rules: ({ user_message }) => {
      const output = quietOutput();
      if (!DEADLINE.test(user_message)) return output;
      output.claims.push({ id: "time_pressure", text: "The user is working against a deadline.", confidence: 0.8 });
      output.proposals.push({ kind: "do_not", text: "suggest anything that takes longer than the time left" });
      return output;
    },
  }),
});
