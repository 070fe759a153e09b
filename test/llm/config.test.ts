import { describe, expect, it } from "vitest";
import {
  DEFAULT_LLM_BASE_URL,
  DEFAULT_LLM_MODEL,
  describeLlm,
  LlmConfigError,
  LOCAL_SERVER_API_KEY,
  llmConfigFromEnv,
} from "../../src/llm/config.ts";
import { createChatModel } from "../../src/llm/index.ts";

const base = { CONCLAVE_LLM_BASE_URL: "http://127.0.0.1:11434/v1", CONCLAVE_LLM_MODEL: "qwen3:4b" };

describe("llmConfigFromEnv", () => {
  it("returns null (offline model) when neither a base URL nor an API key is set", () => {
    expect(llmConfigFromEnv({})).toBeNull();
    expect(llmConfigFromEnv({ CONCLAVE_LLM_BASE_URL: "", CONCLAVE_LLM_MODEL: "m" })).toBeNull();
    expect(llmConfigFromEnv({ CONCLAVE_LLM_BASE_URL: "  ", OPENAI_API_KEY: " " })).toBeNull();
    expect(llmConfigFromEnv({ OPENAI_MODEL: "gpt-4.1" })).toBeNull();
  });

  it("takes OPENAI_API_KEY alone as OpenAI with the default model", () => {
    expect(llmConfigFromEnv({ OPENAI_API_KEY: "sk-x" })).toEqual({
      baseURL: DEFAULT_LLM_BASE_URL,
      apiKey: "sk-x",
      model: DEFAULT_LLM_MODEL,
      timeoutMs: 30_000,
      maxRetries: 2,
    });
    expect(DEFAULT_LLM_BASE_URL).toBe("https://api.openai.com/v1");
    expect(DEFAULT_LLM_MODEL).toBe("gpt-4.1-mini");
  });

  it("honours OPENAI_BASE_URL and OPENAI_MODEL, and the CONCLAVE_LLM_* names win over them", () => {
    const standard = { OPENAI_API_KEY: "sk-x", OPENAI_BASE_URL: "https://llm.example/v1", OPENAI_MODEL: "big" };
    expect(llmConfigFromEnv(standard)).toMatchObject({ baseURL: "https://llm.example/v1", model: "big" });
    expect(llmConfigFromEnv({ OPENAI_API_KEY: "sk-x", OPENAI_BASE_URL: "https://llm.example/v1" })?.model).toBe(
      DEFAULT_LLM_MODEL,
    );
    expect(
      llmConfigFromEnv({
        ...standard,
        CONCLAVE_LLM_API_KEY: "sk-ours",
        CONCLAVE_LLM_BASE_URL: "https://ours.example/v1",
        CONCLAVE_LLM_MODEL: "ours",
      }),
    ).toMatchObject({ apiKey: "sk-ours", baseURL: "https://ours.example/v1", model: "ours" });
  });

  it("keeps the offline model when the model is 'offline', whatever else is set", () => {
    expect(llmConfigFromEnv({ OPENAI_API_KEY: "sk-x", OPENAI_MODEL: "offline" })).toBeNull();
    expect(llmConfigFromEnv({ ...base, CONCLAVE_LLM_MODEL: "offline", OPENAI_MODEL: "m" })).toBeNull();
  });

  it("says in one line which model a process runs", () => {
    expect(describeLlm(llmConfigFromEnv({ OPENAI_API_KEY: "sk-x" }))).toBe("gpt-4.1-mini at https://api.openai.com/v1");
    expect(describeLlm(llmConfigFromEnv({ ...base, CONCLAVE_LLM_BASE_URL: "http://me:pw@127.0.0.1:1/v1" }))).toBe(
      "qwen3:4b at http://me:****@127.0.0.1:1/v1",
    );
    expect(describeLlm(null)).toMatch(/^the offline model/);
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

  it("requires a model when a base URL is set without a key", () => {
    expect(() => llmConfigFromEnv({ CONCLAVE_LLM_BASE_URL: base.CONCLAVE_LLM_BASE_URL })).toThrow(LlmConfigError);
    expect(() => llmConfigFromEnv({ OPENAI_BASE_URL: base.CONCLAVE_LLM_BASE_URL })).toThrow(
      /^CONCLAVE_LLM_MODEL \(or OPENAI_MODEL\) is required when OPENAI_BASE_URL is set without an API key/,
    );
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
