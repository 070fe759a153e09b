/**
 * LLM mode: a knowledge worker with CONCLAVE_EMBEDDING_MODEL embeds chunks and queries through the
 * real `openai` client on the suite's OpenAI-compatible server, and ranks by those vectors.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { type ConclaveClient, connect } from "../../src/client/index.ts";
import { llmConfigFromEnv } from "../../src/llm/config.ts";
import { Runner } from "../../src/runtime/runner/runner.ts";
import { startWorker } from "../../src/workers/startWorker.ts";
import type { WorkerHandle } from "../../src/workers/workerOptions.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { type OpenAIServer, scripted, startOpenAIServer } from "../helpers/openaiServer.ts";

const nats = useNatsServer();
let model: OpenAIServer;
let worker: WorkerHandle;
let runner: Runner;
let client: ConclaveClient;

beforeAll(async () => {
  model = await startOpenAIServer(scripted({ content: "unused" }));
  vi.stubEnv("CONCLAVE_EMBEDDING_MODEL", "embed-knowledge");
  const llm = llmConfigFromEnv({ CONCLAVE_LLM_BASE_URL: model.url, CONCLAVE_LLM_MODEL: "scripted-model" });
  worker = await startWorker({
    nc: await nats.connect("worker"),
    agents: [],
    services: ["knowledge"],
    llm: llm ?? false,
  });
  vi.unstubAllEnvs();
  runner = await Runner.start(await nats.connect("runner"));
  client = await connect({ nc: await nats.connect("client") });
});
afterAll(async () => {
  await runner?.stop();
  await worker?.stop();
  await model?.stop();
});

describe("a knowledge worker with CONCLAVE_EMBEDDING_MODEL", () => {
  it("embeds chunks and queries on /v1/embeddings and ranks by those vectors", async () => {
    await client.knowledge.add("field", [
      {
        document: "birds.txt",
        text: "Kestrels hover over open fields hunting voles.\n\nHerons wade in shallow rivers.",
      },
      { document: "ships.md", text: "# Harbour\n\nThe ferry leaves the harbour at dawn." },
    ]);
    const hits = await client.knowledge.search("field", "when does the ferry leave the harbour", { limit: 1 });
    expect(hits[0]).toMatchObject({ document: "ships.md", heading: "Harbour", chunk: 0 });

    expect(new Set(model.embeddingRequests.map((request) => request.model))).toEqual(new Set(["embed-knowledge"]));
    const inputs = model.embeddingRequests.map((request) => request.input);
    // A chunk is embedded with its heading path in front.
    expect(inputs).toContainEqual(["Harbour\n\n# Harbour\n\nThe ferry leaves the harbour at dawn."]);
    expect(inputs).toContainEqual(["when does the ferry leave the harbour"]);
    expect((await client.knowledge.list("field")).map((document) => document.embedder)).toEqual([
      "openai:embed-knowledge",
      "openai:embed-knowledge",
    ]);
  });
});
