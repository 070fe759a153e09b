/**
 * `conclave run --in-process` as a person runs it: a child process, no NATS
 * server at all (CONCLAVE_NATS_URL points nowhere), the recipe's agents and
 * tools loaded from the fixture modules.
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { CONCLAVE_BIN } from "../../src/cli/childProcess.ts";

const RECIPE = "test/fixtures/inprocess/demo.yaml";
const MODULES = ["--agents", "./test/fixtures/inprocess/agents.ts", "--tools", "./test/fixtures/inprocess/tools.ts"];

async function conclave(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [CONCLAVE_BIN, ...args], {
      // Nothing listens there: a run that tried NATS would fail (exit 3).
      env: { ...process.env, CONCLAVE_NATS_URL: "nats://127.0.0.1:1", CONCLAVE_LOG: "quiet" },
      timeout: 60_000,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

describe("conclave run --in-process", () => {
  it("runs the recipe here, streaming its nodes, and prints the final blackboard (exit 0)", async () => {
    const { code, stdout, stderr } = await conclave([
      "run",
      RECIPE,
      "--in-process",
      ...MODULES,
      "--input",
      '{"topic": "ip_add {\\"a\\": 20, \\"b\\": 22}"}',
    ]);
    expect(stderr).toBe("");
    expect(code).toBe(0);
    expect(stdout).toContain("running recipe 'inprocess-demo' in-process (session local)");
    expect(stdout).toContain("▸ say (agent)");
    expect(stdout).toMatch(/^ {8}say:default › about ip_add .*\n/m);
    expect(stdout).toContain("→ plan (edge)");
    expect(stdout).toContain('"answer": "Done: ip_add: {\\"sum\\":42}"');
  });

  it("with --json and --dry-run, one event per line (the write tool dry-run) and a result line", async () => {
    const { code, stdout } = await conclave([
      "run",
      RECIPE,
      "--in-process",
      ...MODULES,
      "--dry-run",
      "--json",
      "--input",
      '{"topic": "ip_note {\\"key\\": \\"k\\", \\"text\\": \\"hi\\"}"}',
    ]);
    expect(code).toBe(0);
    const lines = stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines[0]).toMatchObject({ kind: "TURN_STARTED", seq: 0, session_id: "local", turn_id: 1 });
    expect(lines.find((line) => line.kind === "TOOL_CALL_REQUESTED")).toMatchObject({
      payload: { tool: "ip_note", mode: "dry_run" },
    });
    expect(lines.find((line) => line.kind === "TOOL_CALL_FINISHED")).toMatchObject({
      payload: { ok: true, result: { would_write: "k", bytes: 2 }, worker: "in-process" },
    });
    expect(lines.at(-2)).toMatchObject({ kind: "TURN_COMPLETED" });
    expect(lines.at(-1)).toMatchObject({
      result: {
        status: "completed",
        sessionId: "local",
        turnId: 1,
        outcome: { status: "Complete" },
        output: { plan: { calls: 1 } },
      },
    });
  });

  it("--in-process without --agents is a usage error: exit 2, one line", async () => {
    const { code, stdout, stderr } = await conclave(["run", RECIPE, "--in-process"]);
    expect(code).toBe(2);
    expect(stdout).toBe("");
    expect(stderr.trim().split("\n")).toHaveLength(1);
    expect(stderr).toContain("--in-process needs --agents");
  });

  it("inputs that do not match interface.inputs: exit 2, naming the path", async () => {
    const { code, stderr } = await conclave(["run", RECIPE, "--in-process", ...MODULES]);
    expect(code).toBe(2);
    expect(stderr).toContain("recipe.inputs.topic");
  });
});
