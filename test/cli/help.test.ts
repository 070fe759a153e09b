/**
 * What `conclave --help` and a command's `--help` say, as a user runs them
 * (no NATS needed): the gateway's help names every protocol it serves, and
 * the global help lists exactly the commands whose own flags include --json.
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { CONCLAVE_BIN } from "../../src/cli/childProcess.ts";
import type { Command } from "../../src/cli/command.ts";

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

/** The commands `conclave --help` lists, and those its `--json` line names. */
function parseGlobalHelp(text: string): { commands: string[]; json: string[] } {
  const lines = text.split("\n");
  const start = lines.indexOf("Commands:");
  const commands: string[] = [];
  for (const line of lines.slice(start + 1)) {
    const name = /^ {2}([a-z]+) /.exec(line)?.[1];
    if (!name) break;
    commands.push(name);
  }
  // The --json option's text: its line and the continuation lines (indented past the option names) after it.
  const at = lines.findIndex((line) => line.trimStart().startsWith("--json"));
  const option = [lines[at] ?? ""];
  for (const line of lines.slice(at + 1)) {
    if (!/^ {10,}\S/.test(line)) break;
    option.push(line);
  }
  const json = [...option.join(" ").matchAll(/\b([a-z]+)\b/g)]
    .map((match) => match[1] ?? "")
    .filter((word) => commands.includes(word));
  return { commands, json };
}

describe("conclave --help's --json", () => {
  it("names every command that takes --json, and no other", async () => {
    const { commands, json } = parseGlobalHelp(await help(["--help"]));
    expect(commands.length).toBeGreaterThan(30);
    const takesJson: string[] = [];
    for (const name of commands) {
      const command = ((await import(`../../src/cli/commands/${name}.ts`)) as { default: Command }).default;
      if ("json" in command.flags) takesJson.push(name);
    }
    expect(takesJson.length).toBeGreaterThan(10);
    expect([...new Set(json)].sort()).toEqual(takesJson.sort());
  });
});
