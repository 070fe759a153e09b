import type { AgentContext } from "../../src/contracts/agent.ts";
import type { LedgerDigest } from "../../src/contracts/ledger.ts";
import type { Episode } from "../../src/contracts/workspace.ts";

/** Deterministic synthetic contexts for the context arena's tests. */

const zero = { vulnerability: 0, advice_requested: 0, relational_bid: 0, ai_feelings_probe: 0, humor_masking: 0 };

export const episode = (turn: number, words = 12): Episode => ({
  session_id: "s-arena",
  turn_id: turn,
  user_text: `Turn ${turn} message: ${"about the garden project and the budget ".repeat(Math.ceil(words / 7)).trim()}. Second sentence here.`,
  response: `Reply ${turn}: ${"noted, let us plan the next step together ".repeat(Math.ceil(words / 8)).trim()}. Then more.`,
  intent: "support",
  ts: turn,
});

export const ledgers = (facts: string[], openItems: string[] = []): LedgerDigest => ({
  facts,
  task: { goal: "Plan the spring garden", open_items: openItems, open_blockers: [] },
  counts: {
    facts_active: facts.length,
    facts_resolved: 0,
    items_open: openItems.length,
    items_done: 0,
    blockers_open: 0,
  },
  text: "",
});

export function agentContext(parts: Partial<AgentContext> = {}): AgentContext {
  return {
    user_message: "What should I plant first this spring?",
    sensors: { ...zero, rupture: 0, ambiguity: 0, safety_risk: 0, prompt_injection: 0, advice_requested: 0.8 },
    modulators: { arousal: 0.1, time_pressure: 0, social_risk: 0, uncertainty: 0.3 },
    stance: { valence: 0.2, warmth: 0.6, caution: 0, curiosity: 0.4 },
    claims: [],
    episodes: [],
    ...parts,
  };
}

/** `n` distinct sentences, `label` numbered, of about `words` words each. */
export const sentences = (label: string, n: number, words = 10) =>
  Array.from(
    { length: n },
    (_, index) => `${label} ${index}: ${"a detail worth keeping in mind ".repeat(Math.ceil(words / 6)).trim()}.`,
  );
