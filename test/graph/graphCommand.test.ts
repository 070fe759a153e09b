import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { afterEach, describe, expect, it, vi } from "vitest";
import { MACHINES } from "../../machines/index.ts";
import { UsageError } from "../../src/cli/args.ts";
import { CONCLAVE_BIN } from "../../src/cli/childProcess.ts";
import graphCommand from "../../src/cli/commands/graph.ts";
import { renderMachine } from "../../src/graph/formats.ts";

/** Runs the command in-process and returns what it printed. */
async function graph(...args: string[]): Promise<string> {
  let printed = "";
  vi.spyOn(process.stdout, "write").mockImplementation((chunk) => {
    printed += String(chunk);
    return true;
  });
  expect(await graphCommand.run(args)).toBe(0);
  return printed;
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe("conclave graph", () => {
  it("prints a machine in each format, Mermaid by default", async () => {
    expect(await graph("turn")).toBe(renderMachine(MACHINES.turn!, "mermaid"));
    expect(await graph("session", "--format", "dot")).toBe(renderMachine(MACHINES.session!, "dot"));
    expect(JSON.parse(await graph("agent", "-f", "json"))).toMatchObject({
      id: "agent",
      root: { initial: "agent.idle" },
    });
  });

  it("rejects an unknown machine (naming the machines), an unknown format, or no machine", async () => {
    await expect(graphCommand.run(["teapot"])).rejects.toThrow(
      new UsageError(`unknown machine 'teapot'; the machines are: ${Object.keys(MACHINES).join(", ")}`),
    );
    await expect(graphCommand.run(["toString"])).rejects.toThrow(/unknown machine 'toString'/);
    await expect(graphCommand.run(["turn", "--format", "svg"])).rejects.toThrow(
      /unknown format 'svg'; choose mermaid, dot, json/,
    );
    await expect(graphCommand.run([])).rejects.toThrow(UsageError);
  });

  it("exits 2 with the list of machines from the command line", async () => {
    const failure = await promisify(execFile)(process.execPath, [CONCLAVE_BIN, "graph", "teapot"]).then(
      () => null,
      (error: { code: number; stdout: string; stderr: string }) => error,
    );
    expect(failure?.code).toBe(2);
    expect(failure?.stdout).toBe("");
    expect(failure?.stderr).toContain(
      `unknown machine 'teapot'; the machines are: ${Object.keys(MACHINES).join(", ")}`,
    );
  });
});
