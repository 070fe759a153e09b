/**
 * What `conclave --help` and a command's `--help` say, as a user runs them
 * (no NATS needed): the gateway's help names every protocol it serves.
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { CONCLAVE_BIN } from "../../src/cli/childProcess.ts";

const execute = promisify(execFile);

/** `conclave <args>`'s standard output (it must exit 0). */
async function help(args: string[]): Promise<string> {
  const { stdout } = await execute(process.execPath, [CONCLAVE_BIN, ...args], {
    env: { ...process.env, CONCLAVE_DEBUG: "" },
  });
  return stdout;
}

describe("conclave --help", () => {
  it("serve's help and its line in the global help name MCP, A2A and AG-UI", async () => {
    const serve = await help(["serve", "--help"]);
    expect(serve.split("\n")[0]).toMatch(/MCP.*A2A.*AG-UI/);
    expect(serve).toContain("/ag-ui");
    expect(serve).toContain("@ag-ui/core");
    const global = await help(["--help"]);
    expect(global.split("\n").find((line) => line.trimStart().startsWith("serve "))).toMatch(/MCP.*A2A.*AG-UI/);
  });
});
