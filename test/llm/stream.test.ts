import { describe, expect, it } from "vitest";
import type { StreamPart, TextStream } from "../../src/contracts/model.ts";
import { LlmError } from "../../src/llm/errors.ts";
import { modelAgainst, rejection } from "./fixtures.ts";

const ask = { caller: "voice", system: "You speak.", user: "Say hi" };

async function collect(stream: TextStream): Promise<StreamPart[]> {
  const parts: StreamPart[] = [];
  for await (const part of stream) parts.push(part);
  return parts;
}

const textOf = (parts: StreamPart[], type: StreamPart["type"]) =>
  parts
    .filter((part) => part.type === type)
    .map((part) => part.delta)
    .join("");

describe("OpenAIChatModel.stream", () => {
  it("yields the content as several deltas and resolves usage from the final chunk", async () => {
    const content = "Hello there, how is the deadline going?";
    const { server, model } = await modelAgainst([{ content, usage: { prompt_tokens: 12, completion_tokens: 9 } }]);
    const stream = model.stream({ ...ask, maxTokens: 64 });
    const parts = await collect(stream);

    expect(parts.length).toBeGreaterThan(3);
    expect(parts.every((part) => part.type === "content")).toBe(true);
    expect(textOf(parts, "content")).toBe(content);
    await expect(stream.usage).resolves.toEqual({ prompt_tokens: 12, completion_tokens: 9 });
    expect(server.requests[0]).toMatchObject({
      stream: true,
      stream_options: { include_usage: true },
      max_tokens: 64,
    });
  });

  it.each(["reasoning_content", "reasoning"] as const)(
    "yields delta.%s as reasoning parts, before content",
    async (field) => {
      const { model } = await modelAgainst([{ reasoning: "They seem tense.", reasoningField: field, content: "Hi." }]);
      const parts = await collect(model.stream(ask));
      expect(textOf(parts, "reasoning")).toBe("They seem tense.");
      expect(textOf(parts, "content")).toBe("Hi.");
      expect(parts.at(0)?.type).toBe("reasoning");
      expect(parts.at(-1)?.type).toBe("content");
    },
  );

  it("resolves usage to zeros when the server sends none", async () => {
    const { model } = await modelAgainst([{ content: "ok", usage: null }]);
    const stream = model.stream(ask);
    await collect(stream);
    await expect(stream.usage).resolves.toEqual({ prompt_tokens: 0, completion_tokens: 0 });
  });

  it("sends nothing until iterated, and can be iterated only once", async () => {
    const { server, model } = await modelAgainst([{ content: "ok" }]);
    const stream = model.stream(ask);
    expect(server.requests).toHaveLength(0);
    await collect(stream);
    expect(server.requests).toHaveLength(1);
    await expect(collect(stream)).rejects.toThrow(/only once/);
  });

  it("stops with LlmError aborted when the signal aborts mid-stream", async () => {
    const { model } = await modelAgainst([{ content: "a long answer that trickles in slowly", chunkDelayMs: 40 }]);
    const controller = new AbortController();
    const stream = model.stream({ ...ask, signal: controller.signal });
    const parts: StreamPart[] = [];
    const error = await rejection(
      (async () => {
        for await (const part of stream) {
          parts.push(part);
          if (parts.length === 2) controller.abort();
        }
      })(),
    );
    expect(error).toBeInstanceOf(LlmError);
    expect(error).toMatchObject({ code: "aborted", caller: "voice" });
    expect(parts).toHaveLength(2);
    await expect(stream.usage).resolves.toEqual({ prompt_tokens: 0, completion_tokens: 0 });
  });

  it("times out a stream that stalls after its headers (the client's own timeout does not cover the body)", async () => {
    const { model } = await modelAgainst([{ content: "slow words arriving", chunkDelayMs: 1_000 }]);
    const error = await rejection(collect(model.stream({ ...ask, timeoutMs: 200 })));
    expect(error).toMatchObject({ code: "timeout", caller: "voice" });
  });

  it("retries a 429 before the stream starts", async () => {
    const { server, model } = await modelAgainst([
      { status: 429, headers: { "retry-after-ms": "10" } },
      { content: "after the wait" },
    ]);
    expect(textOf(await collect(model.stream(ask)), "content")).toBe("after the wait");
    expect(server.requests).toHaveLength(2);
  });

  it("ends early without error when the consumer breaks, and resolves usage", async () => {
    const { model } = await modelAgainst([{ content: "one two three four five six", chunkDelayMs: 5 }]);
    const stream = model.stream(ask);
    for await (const _part of stream) break;
    await expect(stream.usage).resolves.toEqual({ prompt_tokens: 0, completion_tokens: 0 });
  });
});
