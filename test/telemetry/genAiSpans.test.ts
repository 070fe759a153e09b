import { context, SpanKind, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from "@opentelemetry/sdk-trace-base";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { defineAgent } from "../../src/agents/defineAgent.ts";
import { runAgent } from "../../src/agents/runAgent.ts";
import { runFastSensors } from "../../src/cognition/sensors.ts";
import { neutralModulators, neutralStance } from "../../src/contracts/workspace.ts";
import { createEmbedder } from "../../src/llm/embeddings.ts";
import { OfflineToolModel } from "../../src/llm/offlineModel.ts";
import { agentRequest } from "../helpers/agents.ts";
import { modelAgainst } from "../llm/fixtures.ts";

const spans = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] });

beforeAll(() => {
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  trace.setGlobalTracerProvider(provider);
});
afterAll(async () => {
  await provider.shutdown();
  trace.disable();
  context.disable();
});
beforeEach(() => spans.reset());

const named = (name: string): ReadableSpan[] => spans.getFinishedSpans().filter((span) => span.name === name);

const agentContext = (message: string) => ({
  user_message: message,
  sensors: runFastSensors(message),
  modulators: neutralModulators(),
  stance: neutralStance(),
  claims: [],
  episodes: [],
});

describe("GenAI spans", () => {
  it("an agent's run is `invoke_agent`, its model calls `chat` spans under it, with their usage", async () => {
    const { model } = await modelAgainst([
      { content: '{"mood":"calm"}', usage: { prompt_tokens: 10, completion_tokens: 4 } },
      { content: "all fine", usage: { prompt_tokens: 7, completion_tokens: 2 } },
    ]);
    const agent = defineAgent({
      name: "acme.reader",
      description: "Reads the mood, then says it.",
      output: z.object({ mood: z.string(), said: z.string() }),
      run: async ({ model: asked }) => {
        const { mood } = await asked!.structured({ system: "s", user: "u", schema: z.object({ mood: z.string() }) });
        return { mood, said: await asked!.text({ system: "s", user: mood }) };
      },
    });
    const answer = await runAgent(agent, agentRequest(agent.manifest.id, agentContext("hello")), {
      model,
      signal: new AbortController().signal,
    });
    expect(answer.usage).toEqual({ prompt_tokens: 17, completion_tokens: 6, model: model.model });

    const [run] = named("invoke_agent acme.reader");
    expect(run?.kind).toBe(SpanKind.INTERNAL);
    expect(run?.attributes).toMatchObject({
      "gen_ai.operation.name": "invoke_agent",
      "gen_ai.agent.name": "acme.reader",
      "gen_ai.request.model": "test-model",
      "gen_ai.provider.name": "openai",
      "gen_ai.system": "openai",
      "gen_ai.usage.input_tokens": 17,
      "gen_ai.usage.output_tokens": 6,
      "conclave.session_id": "s1",
      "conclave.turn_id": 1,
    });
    const chats = named("chat test-model");
    expect(chats).toHaveLength(2);
    for (const chat of chats) {
      expect(chat.kind).toBe(SpanKind.CLIENT);
      expect(chat.parentSpanContext?.spanId).toBe(run!.spanContext().spanId);
      expect(chat.attributes).toMatchObject({
        "gen_ai.operation.name": "chat",
        "conclave.caller": "agent:acme.reader",
      });
    }
    expect(chats.map((chat) => chat.attributes["gen_ai.usage.input_tokens"])).toEqual(expect.arrayContaining([10, 7]));
  });

  it("a failed model call marks its span failed", async () => {
    const { model } = await modelAgainst([{ status: 400 }]);
    await expect(
      model.structured({ caller: "council", system: "s", user: "u", schema: z.object({}), schemaName: "x" }),
    ).rejects.toThrow();
    const [chat] = named("chat test-model");
    expect(chat?.status.code).toBe(2); // SpanStatusCode.ERROR
    expect(chat?.attributes["error.type"]).toBe("bad_request");
  });

  it("the offline model's tool round and the offline embedder have their spans", async () => {
    await new OfflineToolModel().complete({
      caller: "agent:acme.x",
      messages: [{ role: "user", content: "hello" }],
      tools: [],
    });
    expect(named("chat offline")[0]?.attributes).toMatchObject({
      "gen_ai.provider.name": "conclave.offline",
      "gen_ai.usage.input_tokens": 0,
    });
    await createEmbedder({ kind: "offline", dims: 8 })!.embed(["a", "b"]);
    expect(named("embeddings offline")[0]?.attributes).toMatchObject({
      "gen_ai.operation.name": "embeddings",
      "conclave.embeddings.inputs": 2,
    });
  });
});
