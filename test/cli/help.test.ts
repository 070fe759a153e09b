/**
 * What `conclave --help` and a command's `--help` say, as a user runs them
 * (no NATS needed): the gateway's help names every protocol it serves, and
 * the global help lists exactly the commands whose own flags include --json.
 */
import { describe, expect, it } from "vitest";
import { conclaveOutput as help, loadCommand, parseGlobalHelp } from "../helpers/cliCommands.ts";

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

describe("conclave --help's --json", () => {
  it("names every command that takes --json, and no other", async () => {
    const { commands, json } = parseGlobalHelp(await help(["--help"]));
    expect(commands.length).toBeGreaterThan(30);
    const takesJson: string[] = [];
    for (const name of commands) {
      if ("json" in (await loadCommand(name)).flags) takesJson.push(name);
    }
    expect(takesJson.length).toBeGreaterThan(10);
    expect([...new Set(json)].sort()).toEqual(takesJson.sort());
  });
});
