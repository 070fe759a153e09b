import { describe, expect, it } from "vitest";
import { LlmError } from "../../src/llm/errors.ts";
import { OpenAIChatModel } from "../../src/llm/openaiModel.ts";
import { startOpenAIServer } from "../helpers/openaiServer.ts";
import { sleep } from "../helpers/wait.ts";
import { modelAgainst, rejection, Verdict, validVerdict } from "./fixtures.ts";

const ask = { caller: "agent:emotion.stress", system: "s", user: "u", schema: Verdict, schemaName: "verdict" };
const ok = { content: JSON.stringify(validVerdict) };
const quickRetry = { "retry-after-ms": "10" };

describe("OpenAIChatModel failures, through the real openai client", () => {
  it("lets the client retry a 429 (retry-after-ms) and succeeds", async () => {
    const { server, model } = await modelAgainst([{ status: 429, headers: quickRetry }, ok]);
    const result = await model.structured(ask);
    expect(result.value).toEqual(validVerdict);
    expect(result.attempts).toBe(1); // the HTTP retry is the client's, not an output retry
    expect(server.requests).toHaveLength(2);
  });

  it("lets the client retry a 500 and succeeds", async () => {
    const { server, model } = await modelAgainst([{ status: 500, headers: quickRetry }, ok]);
    expect((await model.structured(ask)).value).toEqual(validVerdict);
    expect(server.requests).toHaveLength(2);
  });

  it("maps 429s that outlast the retries to rate_limited", async () => {
    const { server, model } = await modelAgainst([{ status: 429, headers: quickRetry }], { maxRetries: 1 });
    const error = await rejection(model.structured(ask));
    expect(error).toMatchObject({ code: "rate_limited", status: 429, caller: "agent:emotion.stress" });
    expect(server.requests).toHaveLength(2);
  });

  it("maps 503s that outlast the retries to server_error", async () => {
    const { model } = await modelAgainst([{ status: 503, headers: quickRetry }], { maxRetries: 1 });
    expect(await rejection(model.structured(ask))).toMatchObject({ code: "server_error", status: 503 });
  });

  it("maps a 400 to bad_request without retrying, keeping the server's message", async () => {
    const { server, model } = await modelAgainst([
      { status: 400, body: { error: { message: "model 'x' not found", type: "invalid_request_error" } } },
    ]);
    const error = await rejection(model.structured(ask));
    expect(error).toMatchObject({ code: "bad_request", status: 400 });
    expect((error as LlmError).message).toContain("model 'x' not found");
    expect(server.requests).toHaveLength(1);
  });

  it("times out a server that never answers, promptly, retries included", async () => {
    const { server, model } = await modelAgainst([{ hang: true }]);
    const error = await rejection(model.structured({ ...ask, timeoutMs: 200 }));
    expect(error).toBeInstanceOf(LlmError);
    expect(error).toMatchObject({ code: "timeout", caller: "agent:emotion.stress" });
    expect(server.requests).toHaveLength(1);
  });

  it("uses the configured timeout when the request gives none", async () => {
    const { model } = await modelAgainst([{ hang: true }], { timeoutMs: 150, maxRetries: 0 });
    expect(await rejection(model.structured(ask))).toMatchObject({ code: "timeout" });
  });

  it("times out a slow reply (delayMs) as well as a silent one", async () => {
    const { model } = await modelAgainst([{ ...ok, delayMs: 2_000 }]);
    expect(await rejection(model.structured({ ...ask, timeoutMs: 150 }))).toMatchObject({ code: "timeout" });
  });

  it("answers within the deadline when the model is merely slow", async () => {
    const { model } = await modelAgainst([{ ...ok, delayMs: 50 }]);
    expect((await model.structured({ ...ask, timeoutMs: 1_000 })).value).toEqual(validVerdict);
  });

  it("lets a request's timeoutMs exceed the configured default", async () => {
    const { model } = await modelAgainst([{ ...ok, delayMs: 300 }], { timeoutMs: 100, maxRetries: 0 });
    expect((await model.structured({ ...ask, timeoutMs: 2_000 })).value).toEqual(validVerdict);
  });

  it("aborts a pending call when the signal aborts", async () => {
    const { model } = await modelAgainst([{ hang: true }]);
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 50);
    const error = await rejection(model.structured({ ...ask, signal: controller.signal }));
    expect(error).toMatchObject({ code: "aborted", caller: "agent:emotion.stress" });
  });

  it("aborts during the client's retry backoff instead of waiting it out", async () => {
    // No retry-after header: the client would sleep ~0.4–0.5 s before its retry.
    const { server, model } = await modelAgainst([{ status: 500 }, ok]);
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 50);
    expect(await rejection(model.structured({ ...ask, signal: controller.signal }))).toMatchObject({ code: "aborted" });
    // Had it waited out the backoff, the client would have retried by now.
    await sleep(1_000);
    expect(server.requests).toHaveLength(1);
  });

  it("does not send anything when the signal is already aborted", async () => {
    const { server, model } = await modelAgainst([ok]);
    const error = await rejection(model.structured({ ...ask, signal: AbortSignal.abort() }));
    expect(error).toMatchObject({ code: "aborted" });
    expect(server.requests).toHaveLength(0);
  });

  it("maps a refused connection to connection", async () => {
    const server = await startOpenAIServer(() => ok);
    await server.stop(); // nothing listens on this port any more
    const model = new OpenAIChatModel({
      baseURL: server.url,
      apiKey: "k",
      model: "m",
      timeoutMs: 2_000,
      maxRetries: 0,
    });
    expect(await rejection(model.structured(ask))).toMatchObject({ code: "connection" });
  });
});
