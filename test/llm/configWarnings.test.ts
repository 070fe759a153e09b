import { describe, expect, it } from "vitest";
import { llmConfigProblem, llmConfigWarnings } from "../../src/llm/configWarnings.ts";

const LOCAL = "http://127.0.0.1:11434/v1";

describe("llmConfigWarnings", () => {
  it("says nothing of a whole configuration, or of none", () => {
    expect(llmConfigWarnings({})).toEqual([]);
    expect(llmConfigWarnings({ OPENAI_API_KEY: "sk-x" })).toEqual([]);
    expect(llmConfigWarnings({ OPENAI_API_KEY: "sk-x", OPENAI_MODEL: "gpt-4.1" })).toEqual([]);
    expect(llmConfigWarnings({ OPENAI_API_KEY: "sk-x", OPENAI_BASE_URL: LOCAL, OPENAI_MODEL: "qwen3" })).toEqual([]);
    expect(llmConfigWarnings({ CONCLAVE_EMBEDDING_MODEL: "offline", OPENAI_API_KEY: "sk-x" })).toEqual([]);
  });

  it.each([
    [{ OPENAI_MODEL: "gpt-4.1" }, /^OPENAI_MODEL is set without an API key or base URL: the offline model runs/],
    [{ OPENAI_BASE_URL: LOCAL, OPENAI_MODEL: "qwen3" }, /^OPENAI_BASE_URL is set without an API key: a placeholder/],
    [
      { OPENAI_API_KEY: "sk-x", OPENAI_MODEL: "offline" },
      /^OPENAI_MODEL=offline keeps the offline model: .*OPENAI_API_KEY is not used$/,
    ],
    [
      { OPENAI_API_KEY: "sk-x", OPENAI_BASE_URL: LOCAL },
      /^no model is set: the default gpt-4\.1-mini \(an OpenAI model\) is asked of OPENAI_BASE_URL=http:\/\/127\.0\.0\.1:11434\/v1/,
    ],
    [
      { OPENAI_API_KEY: "sk-a", CONCLAVE_LLM_API_KEY: "sk-b" },
      /^CONCLAVE_LLM_API_KEY and OPENAI_API_KEY are both set: CONCLAVE_LLM_API_KEY wins$/,
    ],
    [{ CONCLAVE_LLM_TIMEOUT_MS: "5000" }, /^CONCLAVE_LLM_TIMEOUT_MS is set but no LLM is configured/],
    [{ CONCLAVE_EMBEDDING_DIMENSIONS: "64" }, /^CONCLAVE_EMBEDDING_DIMENSIONS is set without CONCLAVE_EMBEDDING_MODEL/],
    [
      { CONCLAVE_EMBEDDING_MODEL: "offline", CONCLAVE_EMBEDDING_TIMEOUT_MS: "100" },
      /^CONCLAVE_EMBEDDING_TIMEOUT_MS is set with CONCLAVE_EMBEDDING_MODEL=offline/,
    ],
  ])("warns about %o in one line", (env, warning) => {
    const warnings = llmConfigWarnings(env);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(warning);
    expect(warnings[0]).not.toContain("\n");
  });

  it("never shows a key, and never throws on a bad value", () => {
    const warnings = llmConfigWarnings({ OPENAI_API_KEY: "sk-secret-1", CONCLAVE_LLM_API_KEY: "sk-secret-2" });
    expect(warnings.join(" ")).not.toMatch(/secret/);
    expect(() =>
      llmConfigWarnings({ CONCLAVE_LLM_BASE_URL: "not a url", CONCLAVE_LLM_TIMEOUT_MS: "soon" }),
    ).not.toThrow();
  });
});

describe("llmConfigProblem", () => {
  it("is what the processes refuse as a whole, in one line", () => {
    expect(llmConfigProblem({ OPENAI_API_KEY: "sk-x" })).toBeUndefined();
    expect(llmConfigProblem({ OPENAI_BASE_URL: LOCAL })).toMatch(
      /is required when OPENAI_BASE_URL is set without an API key/,
    );
    expect(llmConfigProblem({ OPENAI_BASE_URL: "https://llm.example/v1", OPENAI_MODEL: "m" })).toMatch(
      /is not on this machine and no API key is set/,
    );
    expect(llmConfigProblem({ CONCLAVE_EMBEDDING_MODEL: "e5" })).toMatch(/needs CONCLAVE_LLM_BASE_URL/);
  });
});
