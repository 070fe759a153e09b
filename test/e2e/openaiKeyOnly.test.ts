/**
 * A model from one key: `conclave up` with nothing but OPENAI_API_KEY and OPENAI_BASE_URL set
 * (pointing at the suite's OpenAI-compatible server) runs an LLM-mode turn with the default model,
 * says which model it runs, and the reply is the server's.
 */
import { execFile, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CONCLAVE_BIN } from "../../src/cli/childProcess.ts";
import { DEFAULT_LLM_MODEL } from "../../src/llm/config.ts";
import { freePort } from "../../src/nats/server.ts";
import { conclaveModel } from "../helpers/conclaveModel.ts";
import { type OpenAIServer, startOpenAIServer } from "../helpers/openaiServer.ts";

const REPLY = "This reply was written by the suite's model server.";
const dataDir = mkdtempSync(join(tmpdir(), "conclave-openai-key-"));
let model: OpenAIServer;

beforeAll(async () => {
  const cooperative = conclaveModel();
  // The voice's streamed answer is this server's own sentence; every other request as a cooperative model.
  model = await startOpenAIServer((body, index) => (body.stream ? { content: REPLY } : cooperative(body, index)));
});
afterAll(async () => {
  await model?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

/** The test process's environment without any variable Conclave reads, plus `env`. */
function onlyThese(env: Record<string, string>): NodeJS.ProcessEnv {
  const kept = Object.entries(process.env).filter(([name]) => !/^(CONCLAVE_|OTEL_|OPENAI_|NATS_)/.test(name));
  return { ...Object.fromEntries(kept), CONCLAVE_LOG: "quiet", ...env };
}

describe("OPENAI_API_KEY and OPENAI_BASE_URL alone", () => {
  it("give an LLM-mode turn on that server with the default model", async () => {
    const url = `nats://127.0.0.1:${await freePort()}`;
    const conclave = `"${process.execPath}" "${CONCLAVE_BIN}"`;
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [
        CONCLAVE_BIN,
        "up",
        "--nats-url",
        url,
        "--data-dir",
        dataDir,
        "--exec",
        `${conclave} send --session one-key "I'm stressed about my deadline tomorrow"`,
      ],
      { env: onlyThese({ OPENAI_API_KEY: "sk-test-one-key", OPENAI_BASE_URL: model.url }), timeout: 120_000 },
    );
    expect(stdout).toContain(`[up] model: ${DEFAULT_LLM_MODEL} at ${model.url}`);
    expect(stdout).toContain(`reply: ${REPLY}`);
    expect(stdout).not.toContain("sk-test-one-key");
    // Every call the turn made went to that server, asking for the default model.
    expect(model.requests.some((request) => request.response_format?.json_schema?.name === "agent_output")).toBe(true);
    expect(model.requests.filter((request) => request.stream)).not.toHaveLength(0);
    expect(new Set(model.requests.map((request) => request.model))).toEqual(new Set([DEFAULT_LLM_MODEL]));
  });
});

/** The first line of `conclave <args>`'s log that says the model (it is said before connecting), then the process is stopped. */
async function modelLine(args: string[], env: Record<string, string>): Promise<string> {
  // Nothing answers on port 9: the process says its model, then waits for NATS until stopped.
  const child = spawn(process.execPath, [CONCLAVE_BIN, ...args], {
    env: { ...onlyThese(env), CONCLAVE_LOG: "info", CONCLAVE_NATS_URL: "nats://127.0.0.1:9" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  try {
    return await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no model line in: ${output}`)), 60_000);
      const check = (chunk: Buffer) => {
        output += chunk.toString();
        const line = /"msg":"(model: [^"]*)"/.exec(output);
        if (line) {
          clearTimeout(timer);
          resolve(line[1]!);
        }
      };
      child.stdout.on("data", check);
      child.stderr.on("data", check);
    });
  } finally {
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGKILL");
    await exited;
  }
}

describe("a worker and a runner", () => {
  it("say at start which model they run", async () => {
    const key = { OPENAI_API_KEY: "sk-test-one-key" };
    expect(await modelLine(["worker", "--services", "memory"], key)).toBe(
      `model: ${DEFAULT_LLM_MODEL} at https://api.openai.com/v1`,
    );
    expect(await modelLine(["runner", "--cognition", "runner"], { ...key, OPENAI_MODEL: "gpt-4.1" })).toBe(
      "model: gpt-4.1 at https://api.openai.com/v1",
    );
    expect(await modelLine(["worker", "--services", "memory"], {})).toMatch(/^model: the offline model/);
  });
});
