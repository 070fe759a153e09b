/**
 * A model server that echoes the API key in its errors, called in this
 * process through the real `openai` client: the error the caller gets, and
 * the failed `chat` and `embeddings` spans (status and exception event),
 * quote the server's message with the key replaced.
 */
import { randomUUID } from "node:crypto";
import { context, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { REDACTED } from "../../src/config/secrets.ts";
import { createEmbedder } from "../../src/llm/embeddings.ts";
import { LlmError } from "../../src/llm/errors.ts";
import { startOpenAIServer } from "../helpers/openaiServer.ts";
import { modelAgainst, rejection, Verdict } from "../llm/fixtures.ts";

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

/** Everything a span carries that a collector would show: status, attributes, events and their attributes. */
const exported = () =>
  JSON.stringify(
    spans.getFinishedSpans().map((span) => ({
      name: span.name,
      status: span.status,
      attributes: span.attributes,
      events: span.events.map((event) => ({ name: event.name, attributes: event.attributes })),
    })),
  );

describe("an echoed API key in an error", () => {
  it("is scrubbed from a chat call's error and its span", async () => {
    const key = `sk-inproc-${randomUUID()}`;
    const { model, server } = await modelAgainst(() => ({ status: 401, echoAuthorization: true }), {
      apiKey: key,
      maxRetries: 0,
    });
    const error = await rejection(
      model.structured({ caller: "agent:echo", system: "s", user: "u", schema: Verdict, schemaName: "verdict" }),
    );
    expect(server.requests).toHaveLength(1);
    expect(error).toBeInstanceOf(LlmError);
    expect((error as LlmError).message).toContain(`Incorrect API key provided: ${REDACTED}`);
    expect(JSON.stringify({ message: (error as Error).message, stack: (error as Error).stack })).not.toContain(key);
    expect(String((error as Error).cause)).not.toContain(key);
    const text = exported();
    expect(text).toContain("exception");
    expect(text).toContain(REDACTED);
    expect(text).not.toContain(key);
  });

  it("is scrubbed from an embeddings call's error and its span", async () => {
    const key = `emb-${randomUUID()}`;
    const server = await startOpenAIServer(() => ({ content: "unused" }), {
      embeddings: () => ({ status: 401, echoAuthorization: true }),
    });
    try {
      const embedder = createEmbedder({
        kind: "openai",
        baseURL: server.url,
        apiKey: key,
        model: "embed-model",
        timeoutMs: 5_000,
        maxRetries: 0,
      });
      if (!embedder) throw new Error("an openai embedder was configured");
      const error = await rejection(embedder.embed(["hello"]));
      expect((error as Error).message).toContain(REDACTED);
      expect((error as Error).message).not.toContain(key);
      const text = exported();
      expect(text).toContain(REDACTED);
      expect(text).not.toContain(key);
    } finally {
      await server.stop();
    }
  });
});
