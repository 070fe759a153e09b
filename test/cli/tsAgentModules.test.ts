/**
 * The compiled `conclave` (bin/conclave.js, dist/) hosts agents written in
 * TypeScript, as a checkout's agents/recipes/ are: Node 20 cannot load them
 * by itself, so the worker loads them with tsx.
 */
import { execFile, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { useNatsServer } from "../helpers/nats.ts";
import { until } from "../helpers/wait.ts";

const nats = useNatsServer();
const BIN = fileURLToPath(new URL("../../bin/conclave.js", import.meta.url));
const children: ReturnType<typeof spawn>[] = [];
afterAll(() => {
  for (const child of children) child.kill("SIGKILL");
});

describe("the compiled CLI", () => {
  it("hosts a TypeScript agent module (loaded with tsx)", async () => {
    const env = { ...process.env, CONCLAVE_NATS_URL: nats.url, CONCLAVE_LOG: "quiet" };
    const worker = spawn(process.execPath, [BIN, "worker", "--agents", "./agents/recipes/index.ts"], {
      env,
      stdio: ["ignore", "ignore", "pipe"],
    });
    children.push(worker);
    let stderr = "";
    worker.stderr?.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const listed = async () => {
      const { stdout } = await promisify(execFile)(process.execPath, [BIN, "agents", "--json"], { env });
      return stdout;
    };
    await until(async () => (await listed()).includes("triage.classifier") || worker.exitCode !== null, {
      timeoutMs: 20_000,
      what: "the worker's agents listed",
    });
    expect(stderr).not.toMatch(/cannot load agents/);
    expect(await listed()).toContain("research.web");
  });
});
