import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  compactableEpisodes,
  compactConversation,
  compactOffline,
  summariseConversation,
} from "../../src/context/compaction.ts";
import { tokenizerFor } from "../../src/context/tokenizer.ts";
import { OpenAIChatModel } from "../../src/llm/openaiModel.ts";
import { type OpenAIServer, startOpenAIServer } from "../helpers/openaiServer.ts";
import { episode } from "./contexts.ts";

const tokenizer = tokenizerFor("gpt-4o");
const options = { tokenizer, keep_recent_turns: 2, max_tokens: 120 };

describe("compaction", () => {
  it("folds the turns older than the recent ones into an extractive summary, deterministically", () => {
    const episodes = [1, 2, 3, 4, 5].map((turn) => episode(turn, 60));
    const roomy = { ...options, max_tokens: 600 };
    const compaction = compactOffline(episodes, null, roomy)!;
    expect(compaction.turns_compacted).toEqual([1, 2, 3]);
    expect(compaction.summary.through_turn).toBe(3);
    expect(compaction.summary.text.split("\n")).toHaveLength(3);
    expect(compaction.summary.text).toMatch(/^T1: user: Turn 1 message: about the garden project/);
    // First sentences only.
    expect(compaction.summary.text).not.toContain("Second sentence");
    expect(compaction.tokens_after).toBeLessThan(compaction.tokens_before);
    expect(compactOffline(episodes, null, roomy)).toEqual(compaction);
    // Nothing new to fold: only the recent turns are left after the summary.
    expect(compactOffline(episodes, compaction.summary, roomy)).toBeNull();
    expect(compactableEpisodes(episodes, compaction.summary, 2)).toEqual([]);
  });

  it("keeps the summary under its token bound, giving up its oldest lines first", () => {
    let summary = null;
    for (let turn = 1; turn <= 60; turn += 1) {
      const compaction = compactOffline([episode(turn), episode(turn + 1), episode(turn + 2)], summary, options);
      summary = compaction?.summary ?? summary;
    }
    expect(tokenizer.count(summary!.text)).toBeLessThanOrEqual(120);
    expect(summary!.through_turn).toBe(60);
    expect(summary!.text.split("\n").at(-1)).toMatch(/^T60: /);
  });
});

describe("compaction through the model", () => {
  let server: OpenAIServer;
  beforeAll(async () => {
    server = await startOpenAIServer(() => ({
      content: "The user is planning a garden.\nRoses were chosen.",
      usage: { prompt_tokens: 310, completion_tokens: 12 },
    }));
  });
  afterAll(() => server.stop());

  const modelOn = () =>
    new OpenAIChatModel({
      baseURL: server.url,
      apiKey: "test",
      model: "gpt-4o-mini",
      timeoutMs: 10_000,
      maxRetries: 0,
    });
  const ask = { keep_recent_turns: 2, max_tokens: 120, tokenizer_model: "gpt-4o" };

  it("asks the model for the summary, the previous summary and the older turns in the request", async () => {
    const previous = { through_turn: 1, text: "T1: the user wants a garden." };
    const written = await summariseConversation(
      modelOn(),
      [2, 3, 4, 5].map((turn) => episode(turn)),
      { ...ask, previous },
    );
    expect(written).toEqual({
      through_turn: 3,
      text: "The user is planning a garden.\nRoses were chosen.",
      turns: [2, 3],
      usage: { prompt_tokens: 310, completion_tokens: 12, model: "gpt-4o-mini" },
    });
    const user = String(server.requests.at(-1)?.messages.at(-1)?.content);
    expect(user).toContain("Summary so far:\nT1: the user wants a garden.");
    expect(user).toContain("T3 user: Turn 3 message");
    expect(user).not.toContain("T4 user");
    // Nothing to fold: no call.
    const calls = server.requests.length;
    expect(await summariseConversation(modelOn(), [episode(4), episode(5)], { ...ask, previous })).toBeNull();
    expect(server.requests.length).toBe(calls);
  });

  it("gives a compaction request's instructions to the model in its system prompt", async () => {
    const model = modelOn();
    const before = server.requests.length;
    const episodes = [1, 2, 3].map((turn) => episode(turn));
    await summariseConversation(model, episodes, {
      ...ask,
      previous: null,
      instructions: "keep every date the user gave",
    });
    const system = String(server.requests[before]?.messages[0]?.content);
    expect(system).toContain("Instructions for this summary: keep every date the user gave");
    await summariseConversation(model, episodes, { ...ask, previous: null });
    expect(String(server.requests[before + 1]?.messages[0]?.content)).not.toContain("Instructions for this summary");
  });

  it("is what the arena's compaction uses for exactly the turns it folds in, else it compacts offline", async () => {
    const episodes = [2, 3, 4, 5].map((turn) => episode(turn));
    const previous = { through_turn: 1, text: "T1: the user wants a garden." };
    const written = await summariseConversation(modelOn(), episodes, { ...ask, previous });
    const compaction = compactConversation(episodes, previous, options, written);
    expect(compaction).toMatchObject({
      summariser: "model",
      turns_compacted: [2, 3],
      summary: { through_turn: 3, text: "The user is planning a garden.\nRoses were chosen." },
      usage: { prompt_tokens: 310, completion_tokens: 12, model: "gpt-4o-mini" },
    });
    // Written for other turns (the conversation moved on): not used, the offline summary instead.
    const later = [...episodes, episode(6)];
    const offline = compactConversation(later, previous, options, written);
    expect(offline).toEqual(compactOffline(later, previous, options));
    expect(offline?.summariser).toBe("offline");
    expect(compactConversation(episodes, previous, options, null)).toEqual(compactOffline(episodes, previous, options));
  });
});
