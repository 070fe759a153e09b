import { defineAgent, quietOutput } from "../src/cognition/agentDefinition.ts";

/** When the message is too short or vague to act on, asks one good question. */
export default defineAgent({
  manifest: {
    id: "reasoning.clarifier",
    agency: "reasoning",
    priority: "SCHEDULED",
    triggers: ["ambiguity"],
    cooldown_s: 0,
    token_budget: 300,
    description: "Asks for what is missing when the message is ambiguous.",
  },
  prompt:
    "You are the clarifier. If the message is ambiguous, propose one short question (kind 'ask') that would resolve it.",
  rules: ({ sensors, episodes }) => {
    const output = quietOutput();
    if (sensors.ambiguity < 0.3) return output;
    output.claims.push({
      id: "unclear_request",
      text: "It is not yet clear what the user wants.",
      confidence: sensors.ambiguity,
    });
    output.proposals.push({
      kind: "ask",
      text: episodes.length > 0 ? "how that relates to what we talked about" : "what's on your mind",
    });
    return output;
  },
});
