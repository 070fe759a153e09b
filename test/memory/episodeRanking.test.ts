/**
 * The memory service's retrieval on a real nats-server (JetStream episodes, the NATS KV graph):
 * episodes ranked for the message rather than by recency; embeddings from /v1/embeddings (the
 * real `openai` client against the suite's local server) deciding between equals; and an
 * embeddings endpoint that fails costing only the vectors.
 */
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Episode } from "../../src/contracts/workspace.ts";
import { ensureMemoryStream } from "../../src/eventlog/streams.ts";
import { type Embedder, openAIEmbedder } from "../../src/llm/embeddings.ts";
import { EpisodeStore } from "../../src/memory/episodeStore.ts";
import { openMemoryGraph } from "../../src/memory/graph/open.ts";
import type { MemoryGraphStore } from "../../src/memory/graph/store.ts";
import { cosine } from "../../src/memory/learn/index.ts";
import { SessionMemory, type SessionMemoryOptions } from "../../src/memory/sessionMemory.ts";
import { useNatsServer } from "../helpers/nats.ts";
import {
  type EmbeddingReply,
  hashedEmbedding,
  type OpenAIServer,
  scripted,
  startOpenAIServer,
  TEST_EMBEDDING_DIMS,
} from "../helpers/openaiServer.ts";

const nats = useNatsServer();
let graph: MemoryGraphStore;
let store: EpisodeStore;
let server: OpenAIServer;
/** How the next embeddings requests are answered: the hashed vectors unless a test says otherwise. */
let next: (input: string[]) => EmbeddingReply = () => ({});

beforeAll(async () => {
  const nc = await nats.connect("worker");
  const jsm = await jetstreamManager(nc);
  await ensureMemoryStream(jsm);
  graph = await openMemoryGraph({ nc });
  store = new EpisodeStore(jetstream(nc), jsm);
  server = await startOpenAIServer(scripted({ content: "not used" }), {
    embeddings: (body) => next(typeof body.input === "string" ? [body.input] : body.input),
  });
});
afterAll(async () => {
  await graph.close();
  await server.stop();
});

const embedder = (timeoutMs = 5_000): Embedder =>
  openAIEmbedder({ baseURL: server.url, apiKey: "sk-test", model: "embed-test", timeoutMs, maxRetries: 0 });

const episodeOf = (session: string, turn: number, user: string): Episode => ({
  session_id: session,
  turn_id: turn,
  user_text: user,
  response: "Okay.",
  intent: "support",
  ts: 1_700_000_000_000 + turn,
});

/** Commits one turn per message (turns 1, 2, …), each expected to complete without a warning. */
async function converse(memory: SessionMemory, session: string, messages: readonly string[]): Promise<void> {
  for (const [index, text] of messages.entries()) {
    const reply = await memory.commit(episodeOf(session, index + 1, text));
    expect(reply).toMatchObject({ stored: true });
    expect(reply.warnings).toBeUndefined();
  }
}

const retrieve = (memory: SessionMemory, session: string, turn: number, message: string, limit = 3) =>
  memory.retrieve({ session_id: session, turn_id: turn, user_message: message, limit });

const turnsOf = (episodes: readonly Episode[]) => episodes.map((episode) => episode.turn_id);

const SISTER_FIRST = [
  "My sister Ana is visiting next week",
  "I love jazz",
  "I work night shifts at the hospital",
  "Remind me to call the bank tomorrow",
];

describe("episodes ranked for the message", () => {
  it("puts the turn about the sister first, not the most recent ones", async () => {
    const memory = new SessionMemory(graph, store);
    await converse(memory, "rank-sister", SISTER_FIRST);
    const { episodes } = await retrieve(memory, "rank-sister", 5, "What should I cook when my sister comes?");
    // Turn 1 shares the message's topic (family); the rest of the limit goes to the most recent.
    expect(turnsOf(episodes)).toEqual([1, 4, 3]);
    // By recency alone it would have been turns 2 to 4.
    expect(turnsOf(await store.recent("rank-sister", 5, 3))).toEqual([2, 3, 4]);
    // The episode comes back whole from its node, as it was committed.
    expect(episodes[0]).toEqual(episodeOf("rank-sister", 1, SISTER_FIRST[0]!));
  });

  it("falls back to recency, newest first, when the message is about nothing stored", async () => {
    const memory = new SessionMemory(graph, store);
    await converse(memory, "rank-none", SISTER_FIRST);
    expect(turnsOf((await retrieve(memory, "rank-none", 5, "Okay then")).episodes)).toEqual([4, 3, 2]);
    expect(turnsOf((await retrieve(memory, "rank-none", 5, "Okay then", 0)).episodes)).toEqual([]);
    // Only turns before the one retrieving for.
    expect(turnsOf((await retrieve(memory, "rank-none", 3, "my sister", 5)).episodes)).toEqual([1, 2]);
  });

  it("reads from the episode store what an older or cut node cannot tell, and sessions without nodes", async () => {
    const memory = new SessionMemory(graph, store);
    const session = "rank-older";
    // Turn 1 as written before the nodes kept the episode: `data` has only the turn and tools.
    await store.commit(episodeOf(session, 1, "My sister Ana is visiting next week"));
    await graph.upsertNode({
      id: "episode.1",
      session_id: session,
      kind: "episodic",
      text: "My sister Ana is visiting next week → Okay.",
      topics: ["ana", "family", "next", "visit"],
      data: { turn_id: 1, tools: [] },
    });
    // Turn 2's text is longer than a node keeps: its node is cut, the store has it whole.
    const long = `My sister ${"talks a lot ".repeat(400)}`;
    await memory.commit(episodeOf(session, 2, long));
    expect((await graph.node(session, "episode.2"))?.text.length).toBe(4_000);
    const { episodes } = await retrieve(memory, session, 3, "my sister");
    expect(episodes).toEqual([
      episodeOf(session, 2, long),
      episodeOf(session, 1, "My sister Ana is visiting next week"),
    ]);

    // No episodic node at all (a session older than the graph): the store's most recent, newest first.
    for (const turn of [1, 2, 3]) await store.commit(episodeOf("rank-no-nodes", turn, `turn ${turn}`));
    expect(turnsOf((await retrieve(memory, "rank-no-nodes", 4, "my sister", 2)).episodes)).toEqual([3, 2]);
  });
});

describe("with embeddings from /v1/embeddings", () => {
  const TIED = ["My sister Ana plays the violin", "My brother Tom plays football"];
  /** Shares its topics (family, play) with both turns, and more words with the first. */
  const MESSAGE = "My sister plays";

  it("embeds each turn's nodes in one call and stores the vectors on them", async () => {
    next = () => ({});
    const memory = new SessionMemory(graph, store, { embedder: embedder() });
    const before = server.embeddingRequests.length;
    await converse(memory, "embed-store", ["I love jazz"]);
    const requests = server.embeddingRequests.slice(before);
    expect(requests).toHaveLength(1);
    expect(requests[0]?.input).toEqual(["I love jazz → Okay.", "loves jazz"]);
    for (const id of ["episode.1", "fact.likes.jazz"]) {
      const node = await graph.node("embed-store", id);
      expect(node?.embedding).toEqual(hashedEmbedding(id === "episode.1" ? "I love jazz → Okay." : "loves jazz"));
      expect(node?.data.embedding_model).toBe("openai:embed-test");
    }
    // The same fact again (its recurrence grows, its text does not change): its vector is kept, not asked again.
    await memory.commit(episodeOf("embed-store", 2, "I love jazz"));
    expect(server.embeddingRequests.slice(before + 1).map((request) => request.input)).toEqual([
      ["I love jazz → Okay."],
    ]);
    expect((await graph.node("embed-store", "fact.likes.jazz"))?.recurrence).toBe(2);
  });

  it("orders episodes of equal topic overlap by similarity, where recency would order them the other way", async () => {
    next = () => ({});
    const first = hashedEmbedding(`${TIED[0]} → Okay.`);
    const second = hashedEmbedding(`${TIED[1]} → Okay.`);
    expect(cosine(hashedEmbedding(MESSAGE), first)).toBeGreaterThan(cosine(hashedEmbedding(MESSAGE), second));

    const plain = new SessionMemory(graph, store);
    await converse(plain, "tie-plain", TIED);
    expect(turnsOf((await retrieve(plain, "tie-plain", 3, MESSAGE)).episodes)).toEqual([2, 1]);

    const memory = new SessionMemory(graph, store, { embedder: embedder() });
    await converse(memory, "tie-embedded", TIED);
    const before = server.embeddingRequests.length;
    expect(turnsOf((await retrieve(memory, "tie-embedded", 3, MESSAGE)).episodes)).toEqual([1, 2]);
    // One call for the message; none for a message without topics (no order it could change).
    expect(server.embeddingRequests.slice(before).map((request) => request.input)).toEqual([[MESSAGE]]);
    await retrieve(memory, "tie-embedded", 3, "Okay then");
    expect(server.embeddingRequests.length).toBe(before + 1);
  });

  it("orders facts of equal topic overlap by similarity too, and search results", async () => {
    next = () => ({});
    // Two facts about family; the message (topic: family) shares a word with the older one only.
    const turns = ["I have a sister called Ana", "I have a brother called Tom"];
    const message = "does my sister like it";
    const plain = new SessionMemory(graph, store);
    await converse(plain, "facts-plain", turns);
    expect((await retrieve(plain, "facts-plain", 3, message)).user_facts).toEqual([
      "has a brother called Tom",
      "has a sister called Ana",
    ]);
    const memory = new SessionMemory(graph, store, { embedder: embedder() });
    await converse(memory, "facts-embedded", turns);
    expect((await retrieve(memory, "facts-embedded", 3, message)).user_facts).toEqual([
      "has a sister called Ana",
      "has a brother called Tom",
    ]);
    const search = (memory: SessionMemory, session: string) =>
      memory.search({ session_id: session, query: "my sister", limit: 4 });
    expect((await search(plain, "facts-plain")).items.map((item) => item.id)).toEqual([
      "episode.2",
      "fact.family.brother",
      "episode.1",
      "fact.family.sister",
    ]);
    expect((await search(memory, "facts-embedded")).items.map((item) => item.id).slice(0, 2)).toEqual([
      "fact.family.sister",
      "episode.1",
    ]);
  });
});

describe("an embeddings endpoint that fails", () => {
  it("stores the turn without vectors (warning), and retrieval ranks without them", async () => {
    next = () => ({});
    const failures: string[] = [];
    const options: SessionMemoryOptions = {
      embedder: embedder(300),
      onEmbeddingError: (error, during) => failures.push(`${during}: ${(error as Error).message}`),
    };
    const memory = new SessionMemory(graph, store, options);
    const session = "embed-down";
    await converse(memory, session, ["I have a sister called Ana"]);

    next = () => ({ status: 500 });
    const reply = await memory.commit(episodeOf(session, 2, "I love jazz"));
    expect(reply.stored).toBe(true);
    expect(reply.warnings).toEqual([
      expect.objectContaining({ code: "memory_pattern_persistence", message: expect.stringMatching(/^embeddings: /) }),
    ]);
    // Written all the same, without a vector.
    const jazz = await graph.node(session, "fact.likes.jazz");
    expect(jazz?.text).toBe("loves jazz");
    expect(jazz?.embedding).toBeUndefined();
    expect((await graph.node(session, "episode.2"))?.embedding).toBeUndefined();

    // The message's call hangs past its deadline: the retrieval ranks by topics, and says why it went without.
    next = () => ({ hang: true });
    const { episodes, user_facts } = await retrieve(memory, session, 3, "my sister is coming, what should we do");
    expect(turnsOf(episodes)).toEqual([1, 2]);
    expect(user_facts[0]).toBe("has a sister called Ana");
    expect(failures).toEqual([
      expect.stringMatching(/^commit: embeddings: /),
      expect.stringMatching(/^retrieve: embeddings: no reply within 300 ms/),
    ]);
  });

  it("keeps vectors that do not fit a node off it (warning), storing the nodes", async () => {
    next = (input) => ({ vectors: input.map(() => new Array(2_000).fill(0.01)) });
    const memory = new SessionMemory(graph, store, { embedder: embedder() });
    const reply = await memory.commit(episodeOf("embed-wide", 1, "I love jazz"));
    expect(reply.warnings?.map((warning) => warning.code)).toEqual(["memory_pattern_persistence"]);
    expect(reply.warnings?.[0]?.message).toMatch(/2000 dimensions does not fit a memory node/);
    expect((await graph.node("embed-wide", "fact.likes.jazz"))?.embedding).toBeUndefined();
    expect(TEST_EMBEDDING_DIMS).toBeLessThan(2_000);
  });
});
