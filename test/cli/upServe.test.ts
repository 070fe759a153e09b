/**
 * `conclave up --serve`: the gateway is one more supervised process. Killed
 * (SIGKILL), it is restarted on the same port and answers `/healthz` again;
 * Ctrl-C stops it with the rest. Flags that make no sense are refused with one
 * line.
 */
import { type ChildProcessByStdio, execFile, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Readable } from "node:stream";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { CONCLAVE_BIN } from "../../src/cli/childProcess.ts";
import { freePort } from "../../src/nats/server.ts";
import { outputOf } from "../helpers/streamOutput.ts";

const dataDir = mkdtempSync(join(tmpdir(), "conclave-up-serve-"));
let up: ChildProcessByStdio<null, Readable, Readable> | undefined;
afterAll(async () => {
  // A test that failed half-way: stop `up` as Ctrl-C does, so it stops its children.
  if (up && up.exitCode === null && up.signalCode === null) {
    const exited = new Promise((resolve) => up!.once("exit", resolve));
    up.kill("SIGINT");
    const timer = setTimeout(() => up?.kill("SIGKILL"), 20_000);
    await exited;
    clearTimeout(timer);
  }
  rmSync(dataDir, { recursive: true, force: true });
});

const healthz = (port: number) =>
  fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(5_000) }).then((response) => response.status);

describe("conclave up --serve", () => {
  it("starts the gateway, and restarts it on its port when it dies", async () => {
    const natsPort = await freePort();
    let gatewayPort = await freePort();
    while (gatewayPort === natsPort) gatewayPort = await freePort();
    up = spawn(
      process.execPath,
      [
        CONCLAVE_BIN,
        "up",
        "--serve",
        "--serve-port",
        String(gatewayPort),
        "--nats-url",
        `nats://127.0.0.1:${natsPort}`,
        "--data-dir",
        dataDir,
      ],
      { env: { ...process.env, CONCLAVE_LOG: "quiet" }, stdio: ["ignore", "pipe", "pipe"] },
    );
    const output = outputOf(up.stdout);
    const stderr = outputOf(up.stderr);
    const exited = new Promise<number | null>((resolve) => up!.once("exit", (code) => resolve(code)));

    const ready = await output.waitFor(/^\[up\] serve ready \(pid (\d+)\)$/m, 60_000);
    await output.waitFor(/^\[up\] Conclave is up on /m, 10_000);
    expect(output.text).toContain(`Conclave gateway: MCP on http://127.0.0.1:${gatewayPort}/mcp`);
    expect(await healthz(gatewayPort)).toBe(200);

    process.kill(Number(ready[1]), "SIGKILL");
    await output.waitFor(/^\[up\] serve exited \(SIGKILL\): restarting in \d+ ms \(restart 1\)$/m, 10_000);
    // Logged once the new gateway serves: it answers at once.
    const restarted = await output.waitFor(/^\[up\] serve restarted \(pid (\d+)\)$/m, 30_000);
    expect(restarted[1]).not.toBe(ready[1]);
    expect(await healthz(gatewayPort)).toBe(200);

    up.kill("SIGINT");
    expect(await exited).toBe(0);
    expect(output.text).toMatch(/^\[up\] stopped$/m);
    expect(stderr.text).not.toMatch(/"level":"(error|fatal)"|^\s+at /m);
    // The gateway went with the rest.
    await expect(healthz(gatewayPort)).rejects.toThrow();
  }, 120_000);

  it("refuses --serve-port without --serve, and a port it cannot keep, with one line", async () => {
    const run = (args: string[]) =>
      promisify(execFile)(process.execPath, [CONCLAVE_BIN, "up", ...args], {
        env: { ...process.env, CONCLAVE_LOG: "quiet" },
      }).catch((error: { code: number; stderr: string }) => error);
    for (const [args, message] of [
      [["--serve-port", "7431"], "--serve-port is for --serve"],
      [["--serve", "--serve-port", "0"], "--serve-port must be a whole number from 1 to 65535"],
    ] as const) {
      const failed = await run([...args]);
      expect(failed, args.join(" ")).toMatchObject({ code: 2 });
      const lines = (failed as { stderr: string }).stderr.trim().split("\n");
      expect(lines).toHaveLength(1);
      expect(lines[0]).toContain(message);
    }
  });
});
