import { describe, expect, it } from "vitest";
import {
  configuredSecrets,
  REDACTED,
  registerSecretEntries,
  registerSecrets,
  scrubError,
  scrubSecrets,
} from "../../src/config/secrets.ts";

const ENV = {
  CONCLAVE_LLM_API_KEY: "llm-key-0001",
  OPENAI_API_KEY: "openai-fallback-0002",
  CONCLAVE_GATEWAY_TOKEN: "gateway-token-0003",
  CONCLAVE_NATS_WORKER_PASSWORD: "worker pass;0004",
  NATS_URL: "nats://me:url/pass@0005@nats.example:4222",
  CONCLAVE_POSTGRES_URL: "postgres://me:pg%40secret0006@db.example/conclave?sslpassword=ssl-secret-0007",
  OTEL_EXPORTER_OTLP_HEADERS: "authorization=Bearer%20otel-token-0008,x-tenant=acme",
  CONCLAVE_LOG: "info",
};

describe("scrubSecrets", () => {
  it("replaces every secret setting, in each of its names and forms", () => {
    const message = [
      "llm-key-0001",
      "openai-fallback-0002",
      "gateway-token-0003",
      "worker pass;0004",
      "url/pass@0005",
      "pg@secret0006",
      "pg%40secret0006",
      "ssl-secret-0007",
      "otel-token-0008",
      encodeURIComponent("worker pass;0004"),
      JSON.stringify("url/pass@0005"),
    ].join(" | ");
    const scrubbed = scrubSecrets(message, ENV);
    expect(scrubbed).not.toMatch(/000[1-8]/);
    expect(scrubbed.split(REDACTED).length - 1).toBe(11);
  });

  it("catches Bearer and Basic credentials and sk- keys it was not told of", () => {
    expect(scrubSecrets("401: got Authorization: Bearer abc.DEF-123_x for model m", {})).toBe(
      `401: got Authorization: Bearer ${REDACTED} for model m`,
    );
    expect(scrubSecrets("Basic dXNlcjpwYXNzd29yZDE=", {})).toBe(`Basic ${REDACTED}`);
    expect(scrubSecrets("Incorrect API key provided: sk-proj-A1b2C3d4E5f6.", {})).toBe(
      `Incorrect API key provided: ${REDACTED}.`,
    );
    // Prose is left alone.
    expect(scrubSecrets("the gateway requires a Bearer token; Basic auth is refused", {})).toBe(
      "the gateway requires a Bearer token; Basic auth is refused",
    );
  });

  it("leaves settings that are not secrets, and short values, alone", () => {
    expect(scrubSecrets("level info at nats.example", ENV)).toBe("level info at nats.example");
    expect(scrubSecrets("a test value", { CONCLAVE_LLM_API_KEY: "test" })).toBe("a test value");
    expect(configuredSecrets({ CONCLAVE_LOG: "debug-level-value" })).not.toContain("debug-level-value");
  });

  it("scrubs secrets registered in code, and credential-named entries of headers", () => {
    registerSecrets(["registered-key-0009"]);
    registerSecretEntries({ Authorization: "Token mcp-header-0010", Accept: "application/json" });
    const scrubbed = scrubSecrets("registered-key-0009 mcp-header-0010 application/json", {});
    expect(scrubbed).toBe(`${REDACTED} ${REDACTED} application/json`);
  });
});

describe("scrubError", () => {
  it("copies an error with its message, stack and causes scrubbed, and none of its other fields", () => {
    const inner = new Error("connect refused: Bearer inner-0011-token");
    const outer = Object.assign(new Error("401 key llm-key-0001", { cause: inner }), {
      name: "AuthenticationError",
      code: "invalid_api_key",
      headers: { authorization: "Bearer llm-key-0001" },
    });
    const previous = process.env.CONCLAVE_LLM_API_KEY;
    process.env.CONCLAVE_LLM_API_KEY = "llm-key-0001";
    try {
      const copy = scrubError(outer) as Error & { code?: string; headers?: unknown };
      expect(copy.name).toBe("AuthenticationError");
      expect(copy.code).toBe("invalid_api_key");
      expect(copy.headers).toBeUndefined();
      expect(copy.message).toBe(`401 key ${REDACTED}`);
      expect(copy.stack).not.toContain("llm-key-0001");
      expect((copy.cause as Error).message).toBe(`connect refused: Bearer ${REDACTED}`);
    } finally {
      if (previous === undefined) delete process.env.CONCLAVE_LLM_API_KEY;
      else process.env.CONCLAVE_LLM_API_KEY = previous;
    }
  });
});
