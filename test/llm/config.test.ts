import { describe, expect, it } from "vitest";
import { LlmConfigError, LOCAL_SERVER_API_KEY, llmConfigFromEnv } from "../../src/llm/config.ts";
import { createChatModel } from "../../src/llm/index.ts";

const base = { CONCLAVE_LLM_BASE_URL: "http://127.0.0.1:11434/v1", CONCLAVE_LLM_MODEL: "qwen3:4b" };

describe("llmConfigFromEnv", () => {
  it("returns null (offline model) when the base URL is unset or empty", () => {
    expect(llmConfigFromEnv({})).toBeNull();
    expect(llmConfigFromEnv({ CONCLAVE_LLM_BASE_URL: "", CONCLAVE_LLM_MODEL: "m" })).toBeNull();
    expect(llmConfigFromEnv({ CONCLAVE_LLM_BASE_URL: "  " })).toBeNull();
  });

  it("fills the defaults; a server on loopback without a key gets a placeholder", () => {
    expect(llmConfigFromEnv(base)).toEqual({
      baseURL: "http://127.0.0.1:11434/v1",
      apiKey: LOCAL_SERVER_API_KEY,
      model: "qwen3:4b",
      timeoutMs: 30_000,
      maxRetries: 2,
    });
  });

  it("reads every variable", () => {
    const config = llmConfigFromEnv({
      ...base,
      CONCLAVE_LLM_API_KEY: "sk-x",
      CONCLAVE_LLM_TIMEOUT_MS: "1500",
      CONCLAVE_LLM_MAX_RETRIES: "0",
    });
    expect(config).toMatchObject({ apiKey: "sk-x", timeoutMs: 1_500, maxRetries: 0 });
  });

  it("requires a model when a base URL is set", () => {
    expect(() => llmConfigFromEnv({ CONCLAVE_LLM_BASE_URL: base.CONCLAVE_LLM_BASE_URL })).toThrow(LlmConfigError);
    expect(() => llmConfigFromEnv({ CONCLAVE_LLM_BASE_URL: base.CONCLAVE_LLM_BASE_URL })).toThrow(/CONCLAVE_LLM_MODEL/);
  });

  it.each([
    ["CONCLAVE_LLM_TIMEOUT_MS", "soon"],
    ["CONCLAVE_LLM_TIMEOUT_MS", "0"],
    ["CONCLAVE_LLM_TIMEOUT_MS", "2.5"],
    ["CONCLAVE_LLM_MAX_RETRIES", "-1"],
    ["CONCLAVE_LLM_MAX_RETRIES", "many"],
    ["CONCLAVE_LLM_BASE_URL", "localhost:11434/v1"],
  ])("rejects %s=%s with an error naming the variable", (name, value) => {
    const read = () => llmConfigFromEnv({ ...base, [name]: value });
    expect(read).toThrow(LlmConfigError);
    expect(read).toThrow(name);
  });

  it("gives a config createChatModel accepts", () => {
    const config = llmConfigFromEnv(base);
    if (!config) throw new Error("expected a config");
    expect(createChatModel(config).model).toBe("qwen3:4b");
  });
});
