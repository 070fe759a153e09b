import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { CONCLAVE_BIN } from "../../src/cli/childProcess.ts";
import { freePort } from "../../src/nats/server.ts";

const run = promisify(execFile);
const dataDir = mkdtempSync(join(tmpdir(), "conclave-up-exec-"));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

/** `conclave up … --exec CMD` against a nats-server it starts on a free port; resolves to its status and output. */
async function upExec(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const url = `nats://127.0.0.1:${await freePort()}`;
  const env = { ...process.env, CONCLAVE_LOG: "quiet" };
  return run(
    process.execPath,
    [CONCLAVE_BIN, "up", "--nats-url", url, "--data-dir", join(dataDir, url.split(":")[2]!), ...args],
    {
      env,
      timeout: 90_000,
    },
  ).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (error: { code: number; stdout: string; stderr: string }) => ({
      code: error.code,
      stdout: error.stdout,
      stderr: error.stderr,
    }),
  );
}

const conclave = `"${process.execPath}" "${CONCLAVE_BIN}"`;

describe("conclave up --agents … --exec …", () => {
  it("runs the command against a stack that hosts the user's agents, then stops it", async () => {
    const { code, stdout } = await upExec([
      "--agents",
      "./test/fixtures/custom/agents.ts",
      "--exec",
      `${conclave} send --session up-exec "will it rain on my walk?"`,
    ]);
    expect(code).toBe(0);
    expect(stdout).toMatch(/worker\[your agents\] ready/);
    expect(stdout).toMatch(/✓ acme\.forecaster .*output \{"umbrella":true/);
    expect(stdout).toContain("acme.forecaster:notes › looking at the sky… rain mentioned");
    expect(stdout).toMatch(/reply: .*Take an umbrella\./);
    expect(stdout).toMatch(/\[up\] stopped/);
  });

  it("serves knowledge collections: a document added is found by a search", async () => {
    const document = join(dataDir, "backups.md");
    writeFileSync(document, "# Backups\n\nThe wombat snapshot runs nightly at 03:41.\n");
    const { code, stdout, stderr } = await upExec([
      "--exec",
      `${conclave} knowledge add "${document}" --collection notes && ${conclave} knowledge search "when does the wombat snapshot run?" --collection notes`,
    ]);
    expect(code).toBe(0);
    // Progress, a line a step on stderr.
    expect(stderr).toMatch(/^\[1\/1\] \S*backups\.md: 1\/1 chunks$/m);
    expect(stdout).toMatch(/worker\[memory,knowledge\] ready/);
    expect(stdout).toContain("wombat snapshot runs nightly at 03:41");
  }, 90_000);

  it("exits with the command's status", async () => {
    const { code, stdout } = await upExec(["--exec", "exit 7"]);
    expect(code).toBe(7);
    expect(stdout).toMatch(/exited with status 7/);
  });

  it("refuses an agent module that exports no agent, with one line, before serving", async () => {
    const module = join(dataDir, "nothing.mjs");
    writeFileSync(module, "export const notAnAgent = 42;\n");
    const { code, stderr } = await upExec(["--agents", module, "--exec", "exit 0"]);
    expect(code).not.toBe(0);
    expect(stderr).toMatch(/exports no agent/);
    expect(stderr).not.toMatch(/^\s+at /m);
  });
});
