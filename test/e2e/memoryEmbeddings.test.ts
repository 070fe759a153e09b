/**
 * Embeddings wired in the worker: a memory service started with CONCLAVE_EMBEDDING_MODEL (and the
 * LLM settings of a local OpenAI-compatible server) embeds what each turn stores and each turn's
 * message through POST /v1/embeddings, and the episodes a turn gets are ranked for its message.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ConclaveClient, connect } from "../../src/client/index.ts";
import type { EngineEvent } from "../../src/contracts/events.ts";
import { openMemoryGraph } from "../../src/memory/graph/open.ts";
import { retrievedOf } from "../helpers/memoryRefs.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { type OpenAIServer, scripted, startOpenAIServer } from "../helpers/openaiServer.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";

const nats = useNatsServer();
const processes = useConclaveProcesses(() => nats.url);
let model: OpenAIServer;
let client: ConclaveClient;

beforeAll(async () => {
  // The memory service's extraction gets no usable answer from this model: it falls back to the offline extractor.
  model = await startOpenAIServer(scripted({ content: "no JSON here" }));
  await Promise.all([
    processes.spawn("agents", ["worker", "--agents", "*", "--services", "scheduler,council,critics"]),
    processes.spawn("memory", ["worker", "--services", "memory"], {
      CONCLAVE_LLM_BASE_URL: model.url,
      CONCLAVE_LLM_MODEL: "scripted-model",
      CONCLAVE_EMBEDDING_MODEL: "embed-e2e",
    }),
    processes.spawn("runner", ["runner"]),
  ]);
  client = await connect({ nc: await nats.connect("client") });
});
afterAll(async () => {
  await model?.stop();
});

async function say(session: string, text: string): Promise<EngineEvent[]> {
  const events: EngineEvent[] = [];
  for await (const event of client.submit(session, text)) events.push(event);
  return events;
}

describe("a memory service with CONCLAVE_EMBEDDING_MODEL", () => {
  it("embeds each turn's nodes and message on /v1/embeddings, and ranks the episodes for the message", async () => {
    const session = "embed-e2e";
    for (const text of ["I have a sister called Ana.", "I love jazz.", "I work night shifts."]) {
      const completed = (await say(session, text)).find((event) => event.kind === "TURN_COMPLETED");
      expect(completed?.kind === "TURN_COMPLETED" && completed.payload.outcome.status).toBe("Complete");
    }
    const message = "My sister is coming over, what should we cook?";
    const fourth = await say(session, message);
    const retrieved = await retrievedOf(await nats.connect("runner"), fourth);
    // The turn about the sister first, though two turns came after it (their order: by similarity to the message).
    const turns = retrieved.episodes.map((episode) => episode.turn_id);
    expect(turns[0]).toBe(1);
    expect([...turns].sort()).toEqual([1, 2, 3]);

    const inputs = model.embeddingRequests.map((request) => request.input);
    expect(new Set(model.embeddingRequests.map((request) => request.model))).toEqual(new Set(["embed-e2e"]));
    expect(inputs).toContainEqual([message]);
    // Turn 1's commit: its episode and its fact, in one call.
    const reply = retrieved.episodes[0]?.response;
    expect(inputs).toContainEqual([`I have a sister called Ana. → ${reply}`, "has a sister called Ana"]);

    const graph = await openMemoryGraph({ nc: await nats.connect("worker") });
    try {
      const episode = await graph.node(session, "episode.1");
      expect(episode?.data.embedding_model).toBe("openai:embed-e2e");
      expect(episode?.embedding?.length).toBeGreaterThan(0);
    } finally {
      await graph.close();
    }
  });
});
