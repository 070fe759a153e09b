/**
 * Working memory in LLM mode, through the real `openai` client against the
 * suite's OpenAI-compatible server: the model is offered
 * `update_working_memory` with the declared schema's properties as its
 * parameters, calls it, and the session's working memory holds what it gave.
 */
import { resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ConclaveClient, connect } from "../../src/client/index.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { type OpenAIServer, startOpenAIServer } from "../helpers/openaiServer.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";

const nats = useNatsServer();
const processes = useConclaveProcesses(() => nats.url);
let model: OpenAIServer;
let client: ConclaveClient;

beforeAll(async () => {
  // The model calls the tool once, then answers once it has the tool's result.
  model = await startOpenAIServer((body) =>
    body.messages.some((message) => message.role === "tool")
      ? { content: "noted" }
      : { toolCalls: [{ name: "update_working_memory", arguments: JSON.stringify({ topic: "quarterly report" }) }] },
  );
  await processes.spawn("agents", ["worker", "--agents", "./test/fixtures/workingMemory/scribe.ts"], {
    CONCLAVE_LLM_BASE_URL: model.url,
    CONCLAVE_LLM_MODEL: "scribe-model",
    CONCLAVE_LLM_MAX_RETRIES: "0",
  });
  await processes.spawn("core", ["worker", "--services", "scheduler,council,critics,memory"]);
  await processes.spawn("runner", ["runner", "--pipeline", "agents"], {
    CONCLAVE_WORKING_MEMORY_SCHEMA: resolve("test/fixtures/workingMemory/schema.json"),
  });
  client = await connect({ nc: await nats.connect("client") });
});
afterAll(async () => {
  await model?.stop();
});

describe("working memory in LLM mode", () => {
  it("is offered to the model as a tool with the schema's properties, and keeps what the model gave", async () => {
    await client.submit("wm-llm", "we are working on the quarterly report").result;
    const offered = model.requests[0]?.tools as { function: { name: string; parameters: Record<string, unknown> } }[];
    const tool = offered.find((entry) => entry.function.name === "update_working_memory");
    expect(tool?.function.parameters).toMatchObject({
      type: "object",
      properties: { topic: { type: "string" }, updates: { type: "integer" } },
    });
    // The update names only the fields it changes: the schema's `required` is not the tool's.
    expect(tool?.function.parameters.required).toBeUndefined();
    expect(await client.workingMemory("wm-llm")).toMatchObject({
      version: 1,
      memory: { topic: "quarterly report" },
      updated_by: "notes.scribe",
    });
  }, 60_000);
});
