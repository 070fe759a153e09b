/**
 * Fifty lazy skills installed: a message about one of them loads it (and no
 * other), an unrelated message loads none, and the ranking says why; with the
 * offline embedder, and through the real `openai` client against the suite's
 * OpenAI-compatible server (`/v1/embeddings`).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { offlineEmbedder, openAIEmbedder } from "../../src/llm/embeddings.ts";
import { loadSkills } from "../../src/skills/load.ts";
import { SkillRouter } from "../../src/skills/router.ts";
import { type OpenAIServer, startOpenAIServer } from "../helpers/openaiServer.ts";
import { FIFTY_INTENTS, fiftySkillsDir } from "./fixtures.ts";

const skills = loadSkills(fiftySkillsDir());
const RELEVANT = "Convert this currency at the exchange rates of today";
const UNRELATED = "My cat knocked the vase off the table again.";

let model: OpenAIServer;
beforeAll(async () => {
  model = await startOpenAIServer(() => ({ content: "unused" }));
});
afterAll(() => model?.stop());

describe.each([
  ["the offline embedder", () => offlineEmbedder(256)],
  [
    "a model's embeddings (openai client)",
    () =>
      openAIEmbedder({
        baseURL: model.url,
        apiKey: "test",
        model: "test-embed",
        timeoutMs: 5_000,
        maxRetries: 0,
        dimensions: 1024,
      }),
  ],
])("fifty lazy skills, with %s", (_, embedder) => {
  it("load the relevant skill for a matching message, and explain the ranking", async () => {
    expect(Object.keys(FIFTY_INTENTS)).toHaveLength(50);
    const router = await SkillRouter.index(skills, embedder());
    const selection = await router.select(RELEVANT);
    expect(selection.loaded.map((skill) => skill.definition.id)).toEqual(["house-style", "fx.convert"]);
    const [top, second] = selection.ranking;
    expect(top).toMatchObject({ id: "fx.convert", strategy: "lazy", loaded: true });
    expect(top?.why).toMatch(/>= 0\.35: close to its trigger intent/);
    expect(second?.loaded).toBe(false);
    expect(second?.why).toMatch(/< 0\.35: not close enough/);
    expect(selection.ranking.filter((rank) => rank.strategy === "lazy")).toHaveLength(50);
    expect(selection.ranking.find((rank) => rank.id === "deep-research")).toMatchObject({ loaded: false });
  });

  it("load no lazy skill for an unrelated message", async () => {
    const router = await SkillRouter.index(skills, embedder());
    const selection = await router.select(UNRELATED);
    expect(selection.loaded.map((skill) => skill.definition.id)).toEqual(["house-style"]);
    expect(selection.ranking.filter((rank) => rank.loaded && rank.strategy === "lazy")).toEqual([]);
  });
});

describe("skills asked for by the user", () => {
  it("load when the message names them", async () => {
    const router = await SkillRouter.index(skills, offlineEmbedder(256));
    const selection = await router.select("/deep-research the history of the printing press");
    expect(selection.loaded.map((skill) => skill.definition.id)).toContain("deep-research");
    expect(selection.ranking.find((rank) => rank.id === "deep-research")?.why).toBe("the message asks for it");
  });

  it("embed the trigger intents once, and each message once", async () => {
    const before = model.embeddingRequests.length;
    const router = await SkillRouter.index(
      skills,
      openAIEmbedder({
        baseURL: model.url,
        apiKey: "test",
        model: "test-embed",
        timeoutMs: 5_000,
        maxRetries: 0,
        dimensions: 1024,
      }),
    );
    await router.select(RELEVANT);
    await router.select(UNRELATED);
    const asked = model.embeddingRequests.slice(before);
    expect(asked.map((body) => (Array.isArray(body.input) ? body.input.length : 1))).toEqual([50, 1, 1]);
  });
});
