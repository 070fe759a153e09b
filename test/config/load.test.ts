/**
 * The configuration table (src/config): each variable parsed from an env object,
 * the standard names read after the CONCLAVE_* ones, one-line errors naming the
 * variable, and the effective configuration `conclave config` prints.
 */
import { describe, expect, it } from "vitest";
import { busOptions } from "../../src/bus/connection.ts";
import { describeConfig, loadConfig, readSetting, setting } from "../../src/config/load.ts";
import { CONFIG_SCHEMA } from "../../src/config/schema.ts";
import { ConfigError } from "../../src/config/variable.ts";
import { isConclaveError } from "../../src/errors.ts";
import {
  DEFAULT_STREAM_CHUNK_BYTES,
  MAX_STREAM_CHUNK_BYTES,
  MAX_STREAM_CHUNK_MS,
} from "../../src/eventlog/chunkCoalescer.ts";
import { LlmConfigError, LOCAL_SERVER_API_KEY, llmConfigFromEnv } from "../../src/llm/config.ts";
import { embeddingConfigFromEnv } from "../../src/llm/embeddings.ts";
import { MAX_EMBEDDING_DIMENSIONS } from "../../src/memory/graph/types.ts";

/** The error a read throws (it must throw). */
function refusal(read: () => unknown): Error {
  try {
    read();
  } catch (error) {
    return error as Error;
  }
  return expect.fail("expected a config error");
}

describe("reading one variable", () => {
  it("parses it to its type, trims it, and counts empty as unset", () => {
    expect(setting({ CONCLAVE_LLM_TIMEOUT_MS: " 1500 " }, "CONCLAVE_LLM_TIMEOUT_MS")).toBe(1_500);
    expect(setting({ CONCLAVE_LLM_TIMEOUT_MS: "" }, "CONCLAVE_LLM_TIMEOUT_MS")).toBe(30_000);
    expect(setting({ CONCLAVE_ENV: "Production" }, "CONCLAVE_ENV")).toBe("production");
    expect(setting({ CONCLAVE_INSPECT: "yes" }, "CONCLAVE_INSPECT")).toBe(true);
    expect(setting({ CONCLAVE_RETAIN_EVENTS: "2d" }, "CONCLAVE_RETAIN_EVENTS")).toBe(2 * 86_400_000);
    expect(setting({ OTEL_TRACES_EXPORTER: "OTLP, console" }, "OTEL_TRACES_EXPORTER")).toEqual(["otlp", "console"]);
    expect(setting({}, "CONCLAVE_LLM_MODEL")).toBeUndefined();
  });

  it("says where the value came from", () => {
    expect(readSetting({ CONCLAVE_NATS_URL: "nats://a:4222" }, "CONCLAVE_NATS_URL").origin).toEqual({
      kind: "env",
      variable: "CONCLAVE_NATS_URL",
    });
    expect(readSetting({ NATS_URL: "nats://b:4222" }, "CONCLAVE_NATS_URL").origin).toEqual({
      kind: "fallback",
      variable: "NATS_URL",
    });
    expect(readSetting({}, "CONCLAVE_NATS_URL")).toEqual({
      value: "nats://127.0.0.1:4222",
      origin: { kind: "default" },
    });
    expect(readSetting({}, "CONCLAVE_TOOL_POLICY")).toEqual({ value: undefined, origin: { kind: "unset" } });
  });

  it("reads CONCLAVE_NATS_<ROLE>_* first for a role", () => {
    const env = { CONCLAVE_NATS_USER: "shared", CONCLAVE_NATS_RUNNER_USER: "runner-7" };
    expect(setting(env, "CONCLAVE_NATS_USER", { role: "runner" })).toBe("runner-7");
    expect(setting(env, "CONCLAVE_NATS_USER", { role: "worker" })).toBe("shared");
  });

  it.each([
    ["CONCLAVE_LLM_TIMEOUT_MS", "soon", "must be a whole number from 1"],
    ["CONCLAVE_STREAM_CHUNK_BYTES", "1e9", "from 1 to 65536"],
    ["CONCLAVE_ENV", "prod\nuction", "not a known environment"],
    ["CONCLAVE_RUNNER_COGNITION", "both", "must be one of workers, runner"],
    ["CONCLAVE_LLM_BASE_URL", "ftp://host/v1", "must be an http(s) URL"],
    ["CONCLAVE_RETAIN_EVENTS", "a while", "expected a duration"],
    ["CONCLAVE_POSTGRES_URL", "mysql://db/x", "postgres://"],
  ] as const)("refuses %s=%j with one line naming the variable", (name, value, problem) => {
    const error = refusal(() => setting({ [name]: value }, name));
    expect(error).toBeInstanceOf(ConfigError);
    expect(isConclaveError(error, "config")).toBe(true);
    expect(error.message).toMatch(new RegExp(`^${name}=".*" is invalid: `));
    expect(error.message).toContain(problem);
    expect(error.message).not.toContain("\n");
  });

  it("names the fallback when the standard name holds the bad value", () => {
    expect(refusal(() => setting({ OPENAI_BASE_URL: "not a url" }, "CONCLAVE_LLM_BASE_URL")).message).toMatch(
      /^OPENAI_BASE_URL="not a url" is invalid/,
    );
  });

  it("never quotes a secret in an error, and hides a URL's password", () => {
    const error = refusal(() => setting({ CONCLAVE_POSTGRES_URL: "mysql://me:hunter2@db/x" }, "CONCLAVE_POSTGRES_URL"));
    expect(error.message).toContain('"mysql://me:****@db/x"');
    expect(error.message).not.toContain("hunter2");
  });

  it("checks every variable with loadConfig", () => {
    expect(loadConfig({}).CONCLAVE_LLM_MAX_RETRIES).toBe(2);
    expect(() => loadConfig({ CONCLAVE_MAX_QUEUED_TURNS: "0" })).toThrow(/^CONCLAVE_MAX_QUEUED_TURNS="0" is invalid/);
  });

  it("keeps the table's limits equal to the modules' own", () => {
    expect(CONFIG_SCHEMA.CONCLAVE_EMBEDDING_DIMENSIONS.schema.safeParse(String(MAX_EMBEDDING_DIMENSIONS)).success).toBe(
      true,
    );
    expect(
      CONFIG_SCHEMA.CONCLAVE_EMBEDDING_DIMENSIONS.schema.safeParse(String(MAX_EMBEDDING_DIMENSIONS + 1)).success,
    ).toBe(false);
    expect(CONFIG_SCHEMA.CONCLAVE_STREAM_CHUNK_MS.schema.safeParse(String(MAX_STREAM_CHUNK_MS + 1)).success).toBe(
      false,
    );
    expect(CONFIG_SCHEMA.CONCLAVE_STREAM_CHUNK_BYTES.schema.safeParse(String(MAX_STREAM_CHUNK_BYTES)).success).toBe(
      true,
    );
    expect(DEFAULT_STREAM_CHUNK_BYTES).toBe(4_096);
  });
});

describe("the standard names (OPENAI_*, NATS_*)", () => {
  it("are read when the CONCLAVE_* names are not set", () => {
    expect(
      llmConfigFromEnv({
        OPENAI_BASE_URL: "https://api.example.com/v1",
        OPENAI_API_KEY: "sk-std",
        CONCLAVE_LLM_MODEL: "m",
      }),
    ).toMatchObject({ baseURL: "https://api.example.com/v1", apiKey: "sk-std" });
    expect(busOptions("client", {}, { NATS_URL: "nats://std:4222" }).servers).toEqual(["nats://std:4222"]);
  });

  it("lose to the CONCLAVE_* names", () => {
    const env = {
      CONCLAVE_LLM_BASE_URL: "http://127.0.0.1:8000/v1",
      OPENAI_BASE_URL: "https://api.example.com/v1",
      CONCLAVE_LLM_API_KEY: "sk-conclave",
      OPENAI_API_KEY: "sk-std",
      CONCLAVE_LLM_MODEL: "m",
    };
    expect(llmConfigFromEnv(env)).toMatchObject({ baseURL: "http://127.0.0.1:8000/v1", apiKey: "sk-conclave" });
    expect(
      busOptions("client", {}, { CONCLAVE_NATS_URL: "nats://ours:4222", NATS_URL: "nats://std:4222" }).servers,
    ).toEqual(["nats://ours:4222"]);
  });

  it("reach the embeddings through the LLM settings", () => {
    expect(
      embeddingConfigFromEnv({
        OPENAI_BASE_URL: "https://api.example.com/v1",
        OPENAI_API_KEY: "sk-std",
        CONCLAVE_LLM_MODEL: "m",
        CONCLAVE_EMBEDDING_MODEL: "text-embedding-3-small",
      }),
    ).toMatchObject({ kind: "openai", baseURL: "https://api.example.com/v1", apiKey: "sk-std" });
  });

  it("NATS_CREDS counts only when the role is given no login of Conclave's own", () => {
    const creds = "/nonexistent/std.creds";
    // Read as the creds file (and refused here because the file is absent: proof it was taken).
    expect(() => busOptions("client", {}, { NATS_CREDS: creds })).toThrow(/cannot read the creds file/);
    expect(
      busOptions("client", {}, { NATS_CREDS: creds, CONCLAVE_NATS_USER: "me", CONCLAVE_NATS_PASSWORD: "pw" }),
    ).toMatchObject({
      user: "me",
      password: "pw",
    });
    expect(busOptions("client", { user: "flag", password: "pw" }, { NATS_CREDS: creds }).credsFile).toBeUndefined();
  });
});

describe("the LLM's API key", () => {
  const model = { CONCLAVE_LLM_MODEL: "m" };

  it("has no default: a server on loopback without one gets a placeholder", () => {
    for (const url of ["http://127.0.0.1:11434/v1", "http://localhost:8000/v1", "http://[::1]:8080/v1"])
      expect(llmConfigFromEnv({ ...model, CONCLAVE_LLM_BASE_URL: url })?.apiKey).toBe(LOCAL_SERVER_API_KEY);
  });

  it("is required for a server elsewhere, with one line naming the variables", () => {
    for (const env of [
      { ...model, CONCLAVE_LLM_BASE_URL: "https://llm.example.com/v1" },
      { ...model, OPENAI_BASE_URL: "https://llm.example.com/v1" },
    ]) {
      const error = refusal(() => llmConfigFromEnv(env));
      expect(error).toBeInstanceOf(LlmConfigError);
      expect(error.message).toMatch(/is not on this machine and no API key is set/);
      expect(error.message).toMatch(/CONCLAVE_LLM_API_KEY or OPENAI_API_KEY/);
      expect(error.message).not.toContain("\n");
    }
    expect(
      refusal(() => llmConfigFromEnv({ ...model, OPENAI_BASE_URL: "https://llm.example.com/v1" })).message,
    ).toMatch(/^OPENAI_BASE_URL=/);
  });
});

describe("describeConfig", () => {
  it("lists every variable with its masked value and origin, and per-role variables when set", () => {
    const rows = describeConfig({
      OPENAI_API_KEY: "sk-very-secret",
      CONCLAVE_NATS_PASSWORD: "hunter2",
      CONCLAVE_NATS_RUNNER_PASSWORD: "runner-secret",
      NATS_URL: "nats://me:natspw@nats.example:4222",
      OTEL_EXPORTER_OTLP_HEADERS: "authorization=Bearer s3cr3t-tok",
      CONCLAVE_REDIS_URL: "redis://:redispw@127.0.0.1:6379",
    });
    const row = (name: string) => rows.find((candidate) => candidate.name === name);
    expect(rows.length).toBeGreaterThanOrEqual(Object.keys(CONFIG_SCHEMA).length + 1);
    expect(row("CONCLAVE_LLM_API_KEY")).toMatchObject({
      value: "****",
      origin: { kind: "fallback", variable: "OPENAI_API_KEY" },
    });
    expect(row("CONCLAVE_NATS_RUNNER_PASSWORD")).toMatchObject({ value: "****" });
    expect(row("CONCLAVE_NATS_URL")?.value).toBe("nats://me:****@nats.example:4222");
    expect(row("CONCLAVE_REDIS_URL")?.value).toBe("redis://:****@127.0.0.1:6379");
    expect(row("CONCLAVE_LLM_TIMEOUT_MS")).toMatchObject({ value: "30000", origin: { kind: "default" } });
    const text = JSON.stringify(rows);
    for (const secret of ["sk-very-secret", "hunter2", "runner-secret", "natspw", "s3cr3t-tok", "redispw"])
      expect(text).not.toContain(secret);
  });

  it("keeps a refused value's problem in its row instead of throwing", () => {
    const rows = describeConfig({ CONCLAVE_LLM_MAX_RETRIES: "99" });
    expect(rows.find((row) => row.name === "CONCLAVE_LLM_MAX_RETRIES")).toMatchObject({
      value: "99",
      problem: expect.stringMatching(/^CONCLAVE_LLM_MAX_RETRIES="99" is invalid: must be a whole number from 0 to 10/),
    });
  });
});
