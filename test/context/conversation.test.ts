import { describe, expect, it } from "vitest";
import { observeUsage, planTurnContext } from "../../src/context/arena.ts";
import { DEFAULT_CONTEXT_BUDGET } from "../../src/context/budget.ts";
import { COMPACTION_READ_MAX } from "../../src/context/compactionRead.ts";
import { tokenizerFor } from "../../src/context/tokenizer.ts";
import { type ContextArenaState, emptyArenaState } from "../../src/contracts/context.ts";
import type { Episode } from "../../src/contracts/workspace.ts";
import { agentPrompt } from "../../src/llm/prompts.ts";
import { agentContext, ledgers } from "./contexts.ts";

/**
 * A 200-turn conversation through the context arena, offline: each turn the
 * memory brings back three episodes, as a retrieval does (the two latest and
 * the latest older one on the message's topic), and everything learnt of the
 * user so far (it only grows); a turn that compacts reads the conversation
 * after the summary (compactionRead.ts: the newest 50 turns), the arena plans
 * the agents' context, and the agent's prompt is built from it as a worker
 * builds it. A model that reports usage is simulated by counting the prompt
 * it would have been sent.
 */
const budget = { ...DEFAULT_CONTEXT_BUDGET, total_tokens: 2_000 };
const policy = { budget, model: "gpt-4o" };
const tokenizer = tokenizerFor("gpt-4o");
const TOPICS = ["the garden", "the fence", "the trip to Lisbon", "the new job", "the sister's wedding", "the budget"];

const userText = (turn: number) =>
  `About ${TOPICS[turn % TOPICS.length]}: ${"I keep thinking about what to do next and whether it is wise ".repeat(6 * (1 + (turn % 4)))}(turn ${turn}). What do you think?`;
const replyText = (turn: number) =>
  `Let's take ${TOPICS[(turn + 1) % TOPICS.length]} one step at a time. ${"A small first step is enough for today. ".repeat(1 + (turn % 3))}`;

/** What a retrieval of limit 3 brings back: the two latest turns, and the latest older one on the message's topic. */
function retrieved(episodes: readonly Episode[], turn: number): Episode[] {
  const latest = episodes.slice(-2);
  const topic = TOPICS[turn % TOPICS.length];
  const onTopic = episodes.findLast(
    (episode) => !latest.includes(episode) && episode.user_text.startsWith(`About ${topic}:`),
  );
  return onTopic ? [onTopic, ...latest] : [...latest];
}

describe("a 200-turn offline conversation", () => {
  it("never exceeds the session's budget, and compacts at the configured pressure", () => {
    let state: ContextArenaState = emptyArenaState();
    const episodes: Episode[] = [];
    const facts: string[] = [];
    const compactions: { turn: number; ratio: number }[] = [];
    const compacted: number[] = [];
    let recalledOlder = 0;
    const pressures: number[] = [];
    for (let turn = 1; turn <= 200; turn += 1) {
      if (turn % 3 === 0) facts.unshift(`The user mentioned ${TOPICS[turn % TOPICS.length]} on turn ${turn}.`);
      const context = agentContext({
        user_message: userText(turn),
        episodes: retrieved(episodes, turn),
        user_facts: [...facts],
        ledgers: ledgers(facts.slice(0, 10), [`[todo] follow up on turn ${turn - 1}`]),
        procedures: ["Keep answers short"],
      });
      // What a compacting turn reads: the turns after the summary, the newest 50 (COMPACTION_READ_MAX).
      const after = state.summary?.through_turn ?? 0;
      const conversation = episodes.filter((episode) => episode.turn_id > after).slice(-COMPACTION_READ_MAX);
      const planned = planTurnContext(state, context, policy, { conversation });
      state = planned.state;

      // Never past the budget: the planned context, and the whole prompt an agent is sent.
      expect(planned.planned.planned_tokens).toBeLessThanOrEqual(planned.planned.target_tokens);
      expect(planned.planned.target_tokens).toBeLessThanOrEqual(budget.total_tokens);
      const prompt = agentPrompt(
        { id: "emotion.stress", prompt: "You notice stress." },
        { mode: "respond", round: 0, context: planned.context },
        policy,
      );
      const promptTokens = tokenizer.count(prompt.system) + tokenizer.count(prompt.user);
      expect(promptTokens).toBeLessThanOrEqual(budget.total_tokens);
      // Working memory never shows a turn the summary covers; one memory recalled is shown in recall instead.
      const through = state.summary?.through_turn ?? 0;
      const zones = planned.planned.zones;
      expect(zones.working_memory.kept.every((id) => !id.startsWith("episode:") || Number(id.slice(8)) > through)).toBe(
        true,
      );
      const older = planned.context.episodes.filter((episode) => episode.turn_id <= through);
      for (const episode of older) expect(zones.recall.kept).toContain(`episode:${episode.turn_id}`);
      recalledOlder += older.length;

      if (planned.compacted) {
        compactions.push({ turn, ratio: planned.compacted.pressure.ratio });
        compacted.push(...planned.compacted.turns_compacted);
        expect(planned.compacted.pressure.ratio).toBeGreaterThanOrEqual(budget.compact_ratio);
        expect(planned.context.summary?.text).toBe(planned.compacted.summary);
      } else {
        // No compaction: the pressure was below the ratio, or there was nothing old enough to fold in.
        const foldable = episodes.filter((episode) => episode.turn_id > through).length > 2;
        expect(planned.planned.pressure.ratio < budget.compact_ratio || !foldable).toBe(true);
      }
      // The pressure the turn met: before compaction, when compaction ran.
      pressures.push((planned.compacted ?? planned.planned).pressure.ratio);

      // The model's count of what it was sent, as a reply's usage reports it.
      state = observeUsage(state, { prompt_tokens: promptTokens, completion_tokens: 60 });
      episodes.push({
        session_id: "s-arena",
        turn_id: turn,
        user_text: userText(turn),
        response: replyText(turn),
        intent: "support",
        ts: turn,
      });
    }
    expect(compactions.length).toBeGreaterThanOrEqual(10);
    expect(state.compactions).toBe(compactions.length);
    // The first compaction comes when the pressure first reaches the ratio, not before.
    const firstAtRatio = pressures.findIndex((ratio) => ratio >= budget.compact_ratio) + 1;
    expect(compactions[0]?.turn).toBe(firstAtRatio);
    // The summaries covered the conversation from the first compaction on, each turn once, not only what
    // memory retrieved (the first read the newest 50 turns before it).
    const through = state.summary?.through_turn ?? 0;
    const first = compacted[0] ?? 0;
    expect(first).toBe(Math.max(1, compactions[0]!.turn - COMPACTION_READ_MAX));
    expect(through).toBeGreaterThan(150);
    expect(compacted).toEqual(Array.from({ length: through - first + 1 }, (_, index) => first + index));
    // Memory recalled turns the summary covered, and the agents were shown each of them.
    expect(recalledOlder).toBeGreaterThan(50);
  });
});
