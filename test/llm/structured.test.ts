import { describe, expect, it } from "vitest";
import { z } from "zod";
import { LlmError } from "../../src/llm/errors.ts";
import { modelAgainst, rejection, Verdict, validVerdict } from "./fixtures.ts";

const ask = { caller: "critic:coherence", system: "You judge replies.", user: "Judge: hello", schemaName: "verdict" };

describe("OpenAIChatModel.structured", () => {
  it("sends the schema as response_format and returns the validated value with usage", async () => {
    const { server, model } = await modelAgainst([
      { content: JSON.stringify(validVerdict), usage: { prompt_tokens: 42, completion_tokens: 7 } },
    ]);
    const result = await model.structured({ ...ask, schema: Verdict, maxTokens: 200 });
    expect(result).toEqual({ value: validVerdict, usage: { prompt_tokens: 42, completion_tokens: 7 }, attempts: 1 });

    const [request] = server.requests;
    expect(request?.model).toBe("test-model");
    expect(request?.max_tokens).toBe(200);
    expect(request?.messages).toEqual([
      { role: "system", content: "You judge replies." },
      { role: "user", content: "Judge: hello" },
    ]);
    expect(request?.response_format).toMatchObject({
      type: "json_schema",
      json_schema: {
        name: "verdict",
        strict: true,
        schema: { type: "object", required: ["verdict", "score", "reasons"], additionalProperties: false },
      },
    });
  });

  it("accepts JSON wrapped in a ```json fence or after a <think> block", async () => {
    const fenced = `\`\`\`json\n${JSON.stringify(validVerdict)}\n\`\`\``;
    const { server, model } = await modelAgainst([
      { content: fenced },
      { content: `<think>short and kind</think>\n${JSON.stringify(validVerdict)}` },
    ]);
    expect((await model.structured({ ...ask, schema: Verdict })).value).toEqual(validVerdict);
    expect((await model.structured({ ...ask, schema: Verdict })).value).toEqual(validVerdict);
    expect(server.requests).toHaveLength(2);
  });

  it("retries once when the reply is not JSON, telling the model what was wrong", async () => {
    const { server, model } = await modelAgainst([
      { content: "Sure! The verdict is pass.", usage: { prompt_tokens: 10, completion_tokens: 5 } },
      { content: JSON.stringify(validVerdict), usage: { prompt_tokens: 20, completion_tokens: 6 } },
    ]);
    const result = await model.structured({ ...ask, schema: Verdict });
    expect(result.value).toEqual(validVerdict);
    expect(result.attempts).toBe(2);
    expect(result.usage).toEqual({ prompt_tokens: 30, completion_tokens: 11 });
    expect(server.requests).toHaveLength(2);
    const retryUser = server.requests[1]?.messages[1]?.content ?? "";
    expect(retryUser.startsWith("Judge: hello")).toBe(true);
    expect(retryUser).toContain("not valid JSON");
  });

  it("retries once when the JSON does not match the schema, naming the failing field", async () => {
    const { server, model } = await modelAgainst([
      { content: JSON.stringify({ ...validVerdict, score: 7 }) },
      { content: JSON.stringify(validVerdict) },
    ]);
    const result = await model.structured({ ...ask, schema: Verdict });
    expect(result).toMatchObject({ value: validVerdict, attempts: 2 });
    const retryUser = server.requests[1]?.messages[1]?.content ?? "";
    expect(retryUser).toContain("does not match the schema");
    expect(retryUser).toContain("score");
  });

  it("gives up with invalid_output after two bad replies, keeping the usage spent", async () => {
    const { server, model } = await modelAgainst([
      { content: "not json", usage: { prompt_tokens: 3, completion_tokens: 2 } },
      { content: JSON.stringify({ verdict: "maybe" }), usage: { prompt_tokens: 4, completion_tokens: 2 } },
    ]);
    const error = await rejection(model.structured({ ...ask, schema: Verdict }));
    expect(error).toBeInstanceOf(LlmError);
    expect(error).toMatchObject({
      code: "invalid_output",
      caller: "critic:coherence",
      usage: { prompt_tokens: 7, completion_tokens: 4 },
    });
    expect((error as LlmError).message).toContain("verdict");
    expect(server.requests).toHaveLength(2);
  });

  it("treats an empty reply as invalid output", async () => {
    const { model } = await modelAgainst([{ content: "" }]);
    const error = await rejection(model.structured({ ...ask, schema: Verdict }));
    expect(error).toMatchObject({ code: "invalid_output" });
  });

  it("sends a non-strict schema for what OpenAI strict mode cannot express (optional fields)", async () => {
    const Note = z.object({ text: z.string(), mood: z.string().optional() });
    const { server, model } = await modelAgainst([{ content: JSON.stringify({ text: "hi" }) }]);
    const result = await model.structured({ ...ask, schema: Note, schemaName: "note" });
    expect(result.value).toEqual({ text: "hi" });
    expect(server.requests[0]?.response_format).toMatchObject({
      type: "json_schema",
      json_schema: { name: "note", strict: false, schema: { type: "object", required: ["text"] } },
    });
  });

  it("rejects a schemaName the API would refuse, without sending anything", async () => {
    const { server, model } = await modelAgainst([{ content: "{}" }]);
    const error = await rejection(model.structured({ ...ask, schema: Verdict, schemaName: "my verdict!" }));
    expect(error).toMatchObject({ code: "bad_request" });
    expect(server.requests).toHaveLength(0);
  });
});
