/** `conclave config`, run as a subprocess: the effective configuration, its origins, secrets masked. */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { CONCLAVE_BIN } from "../../src/cli/childProcess.ts";
import type { ConfigRow } from "../../src/config/load.ts";
import { retentionSettings } from "../../src/eventlog/retention.ts";

/** The environment of the test process without any variable Conclave reads, so only `env` counts. */
function cleanEnv(env: Record<string, string>): NodeJS.ProcessEnv {
  const kept = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !/^(CONCLAVE_|OTEL_|OPENAI_|NATS_)/.test(name)),
  );
  return { ...kept, ...env };
}

async function conclaveConfig(args: string[], env: Record<string, string>) {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [CONCLAVE_BIN, "config", ...args], {
      env: cleanEnv(env),
      timeout: 60_000,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

const SECRETS = {
  OPENAI_API_KEY: "sk-standard-secret",
  CONCLAVE_NATS_PASSWORD: "nats-secret",
  CONCLAVE_NATS_WORKER_PASSWORD: "worker-secret",
  NATS_URL: "nats://me:url-secret@nats.example:4222",
  CONCLAVE_POSTGRES_URL: "postgres://me:pg-secret@db.example/conclave",
  OTEL_EXPORTER_OTLP_HEADERS: "x-api-key=otel-secret",
  NATS_CREDS: "/etc/nats/me.creds",
};

describe("conclave config", () => {
  it("prints each variable's value and origin, with every secret masked", async () => {
    const result = await conclaveConfig([], {
      ...SECRETS,
      CONCLAVE_LLM_BASE_URL: "http://127.0.0.1:11434/v1",
      OPENAI_BASE_URL: "https://api.example.com/v1",
    });
    expect(result.code).toBe(0);
    const line = (name: string) => result.stdout.split("\n").find((text) => text.trim().startsWith(`${name} `));
    expect(line("CONCLAVE_LLM_BASE_URL")).toMatch(/http:\/\/127\.0\.0\.1:11434\/v1\s+from CONCLAVE_LLM_BASE_URL$/);
    expect(line("CONCLAVE_LLM_API_KEY")).toMatch(/\*\*\*\*\s+from OPENAI_API_KEY \(standard name\)$/);
    expect(line("CONCLAVE_NATS_URL")).toMatch(/nats:\/\/me:\*\*\*\*@nats\.example:4222\s+from NATS_URL/);
    expect(line("CONCLAVE_NATS_WORKER_PASSWORD")).toMatch(/\*\*\*\*\s+from CONCLAVE_NATS_WORKER_PASSWORD$/);
    // A creds file is named (its contents are never read).
    expect(line("CONCLAVE_NATS_CREDS_FILE")).toMatch(/\/etc\/nats\/me\.creds\s+from NATS_CREDS/);
    expect(line("CONCLAVE_LLM_TIMEOUT_MS")).toMatch(/30000\s+default$/);
    for (const secret of [
      "sk-standard-secret",
      "nats-secret",
      "worker-secret",
      "url-secret",
      "pg-secret",
      "otel-secret",
    ])
      expect(result.stdout + result.stderr).not.toContain(secret);
  });

  it("prints JSON with --json", async () => {
    const result = await conclaveConfig(["--json"], SECRETS);
    expect(result.code).toBe(0);
    const { variables } = JSON.parse(result.stdout) as { variables: ConfigRow[] };
    expect(variables.find((row) => row.name === "CONCLAVE_LLM_API_KEY")).toMatchObject({
      value: "****",
      origin: { kind: "fallback", variable: "OPENAI_API_KEY" },
      fallbacks: ["OPENAI_API_KEY"],
    });
    expect(variables.find((row) => row.name === "CONCLAVE_ENV")).toMatchObject({
      value: "development",
      origin: { kind: "default" },
    });
    expect(result.stdout).not.toMatch(/secret/);
  });

  it("lists a refused value, then fails with one line naming the variable (exit 2)", async () => {
    const result = await conclaveConfig([], { CONCLAVE_STREAM_CHUNK_MS: "soon" });
    expect(result.code).toBe(2);
    expect(result.stdout).toMatch(/CONCLAVE_STREAM_CHUNK_MS\s+soon\s+INVALID/);
    expect(result.stderr.trim()).toBe(
      'conclave config: CONCLAVE_STREAM_CHUNK_MS="soon" is invalid: must be a whole number from 0 to 60000',
    );
  });

  it("refuses a retention the runner refuses, with the runner's words, and accepts what it accepts", async () => {
    const refused = await conclaveConfig([], { CONCLAVE_RETAIN_EVENTS: "30m" });
    expect(refused.code).toBe(2);
    expect(refused.stdout).toMatch(/CONCLAVE_RETAIN_EVENTS\s+30m\s+INVALID/);
    // What the runner reads its retention with (runtime/runner/parts.ts).
    let runnerMessage = "";
    try {
      retentionSettings({}, { CONCLAVE_RETAIN_EVENTS: "30m" });
    } catch (error) {
      runnerMessage = (error as Error).message;
    }
    expect(runnerMessage).toBe(
      'CONCLAVE_RETAIN_EVENTS="30m" is invalid: a maximum age is 0 (for ever) or at least 1 hour',
    );
    expect(refused.stderr.trim()).toBe(`conclave config: ${runnerMessage}`);

    const accepted = await conclaveConfig([], { CONCLAVE_RETAIN_EVENTS: "90m", CONCLAVE_RETAIN_EPISODES: "0" });
    expect(accepted.code).toBe(0);
    expect(accepted.stdout).toMatch(/CONCLAVE_RETAIN_EVENTS\s+5400000\s+from CONCLAVE_RETAIN_EVENTS/);
    expect(retentionSettings({}, { CONCLAVE_RETAIN_EVENTS: "90m", CONCLAVE_RETAIN_EPISODES: "0" })).toMatchObject({
      eventsMaxAgeMs: 5_400_000,
      episodesMaxAgeMs: 0,
    });
  });

  it("warns about a half-set LLM configuration on stderr, one line each, and still exits 0", async () => {
    const result = await conclaveConfig([], { OPENAI_MODEL: "gpt-4.1", CONCLAVE_LLM_TIMEOUT_MS: "5000" });
    expect(result.code).toBe(0);
    expect(result.stderr.trim().split("\n")).toEqual([
      expect.stringMatching(/^conclave config: warning: OPENAI_MODEL is set without an API key or base URL/),
      expect.stringMatching(/^conclave config: warning: CONCLAVE_LLM_TIMEOUT_MS is set but no LLM is configured/),
    ]);
    expect(result.stdout).toMatch(/CONCLAVE_LLM_MODEL\s+gpt-4\.1\s+from OPENAI_MODEL \(standard name\)/);
    const whole = await conclaveConfig([], { OPENAI_API_KEY: "sk-x" });
    expect(whole).toMatchObject({ code: 0, stderr: "" });
  });

  it("fails (exit 2) on an LLM configuration the processes would refuse as a whole", async () => {
    const result = await conclaveConfig([], { OPENAI_BASE_URL: "https://llm.example.com/v1", OPENAI_MODEL: "m" });
    expect(result.code).toBe(2);
    expect(result.stderr.trim().split("\n").at(-1)).toMatch(
      /^conclave config: OPENAI_BASE_URL="https:\/\/llm\.example\.com\/v1" is not on this machine and no API key is set/,
    );
  });
});
