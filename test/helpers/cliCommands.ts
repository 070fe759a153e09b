import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { CONCLAVE_BIN } from "../../src/cli/childProcess.ts";
import type { Command } from "../../src/cli/command.ts";

const execute = promisify(execFile);

/** `conclave <args>`'s standard output, run as a user runs it (it must exit 0). */
export async function conclaveOutput(args: string[]): Promise<string> {
  const { stdout } = await execute(process.execPath, [CONCLAVE_BIN, ...args], {
    env: { ...process.env, CONCLAVE_DEBUG: "" },
  });
  return stdout;
}

/** The commands `conclave --help` lists, and those its `--json` line names. */
export function parseGlobalHelp(text: string): { commands: string[]; json: string[] } {
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

/** A command's module (src/cli/commands/<name>.ts): its default export, made with defineCommand. */
export async function loadCommand(name: string): Promise<Command> {
  return ((await import(`../../src/cli/commands/${name}.ts`)) as { default: Command }).default;
}

/**
 * Every command `conclave --help` lists (main.ts's table), with the flags its
 * module declares: long (`--session`) and short (`-h`).
 */
export async function commandFlags(): Promise<Map<string, Set<string>>> {
  const { commands } = parseGlobalHelp(await conclaveOutput(["--help"]));
  const table = new Map<string, Set<string>>();
  for (const name of commands) {
    const { flags } = await loadCommand(name);
    const names = Object.entries(flags).flatMap(([long, flag]) => [
      `--${long}`,
      ...(flag.short ? [`-${flag.short}`] : []),
    ]);
    table.set(name, new Set(names));
  }
  return table;
}
