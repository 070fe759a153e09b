/**
 * The guides (README.md, docs/*.md) name only commands, flags and event kinds
 * that exist (issue 38, item 8). What they name is read from their code (see
 * test/helpers/docMentions.ts); what exists, from the code itself: the
 * commands `conclave --help` lists (main.ts's table), each command's declared
 * flags (its module's `flags`, made with defineCommand), the global options
 * of `conclave --help`, and the event kinds of src/contracts/events.ts and of
 * the ledgers (src/contracts/ledger.ts) and of memory insights (src/contracts/memoryInsights.ts).
 */
import { readdirSync, readFileSync } from "node:fs";
import { beforeAll, describe, expect, it } from "vitest";
import { EVENT_KINDS } from "../../src/contracts/events.ts";
import { LedgerEventPayloads } from "../../src/contracts/ledger.ts";
import { MEMORY_INSIGHT_EVENT_KINDS } from "../../src/contracts/memoryInsights.ts";
import { commandFlags, conclaveOutput } from "../helpers/cliCommands.ts";
import { type Mention, mentionsIn } from "../helpers/docMentions.ts";

const KINDS: readonly string[] = [...EVENT_KINDS, ...Object.keys(LedgerEventPayloads), ...MEMORY_INSIGHT_EVENT_KINDS];

const GUIDES = [
  "README.md",
  ...readdirSync("docs")
    .filter((name) => name.endsWith(".md"))
    .map((name) => `docs/${name}`),
];

/**
 * Names a guide uses that are not Conclave's, each with why. Kept small: a
 * name here is one a reader must not look for in `conclave --help` or the log.
 */
const NOT_OURS: ReadonlyArray<{
  file: string;
  type: Mention["type"];
  names: string[];
  why: string;
  /** The name is in a part the bench writes, which one run may leave out (a profile's top rows). */
  generated?: true;
}> = [
  {
    file: "docs/gateway.md",
    type: "event",
    names: ["RUN_STARTED", "RUN_FINISHED", "STEP_STARTED", "STEP_FINISHED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_END"],
    why: "AG-UI's event types (@ag-ui/core), in the table mapping Conclave's events to them",
  },
  {
    file: "docs/gateway.md",
    type: "event",
    names: ["TOOL_CALL_START", "TOOL_CALL_END"],
    why: "AG-UI's event types, beside Conclave's TOOL_CALL_REQUESTED and TOOL_CALL_FINISHED",
  },
  {
    file: "docs/BENCHMARKS.md",
    type: "command",
    names: ["machines"],
    why: "`conclave machines` is a CPU profile's bucket (the machines/ folder), like `conclave src/bus`",
    generated: true,
  },
  {
    file: "docs/protocol.md",
    type: "command",
    names: ["event"],
    why: "`conclave event log stream <i> of <S>` is an event-log stream's description, not a command line",
  },
];

const notOurs = (mention: Mention) =>
  NOT_OURS.some(
    ({ file, type, names }) => mention.file === file && mention.type === type && names.includes(mention.name),
  );

/** `conclave --help`'s global options (`--debug`, `--json`, `-V, --version`). */
function globalOptions(help: string): string[] {
  const lines = help.split("\n");
  const section = lines.slice(lines.indexOf("Global options:") + 1);
  const options = section.slice(
    0,
    section.findIndex((line) => line.trim() === ""),
  );
  return options.flatMap((line) =>
    [...(/^\s+((?:-\w, )?--[\w-]+)/.exec(line)?.[1] ?? "").matchAll(/-+[\w-]+/g)].map((m) => m[0]),
  );
}

/** What exists: each command's flags, and the flags `conclave` takes before a command. */
interface Cli {
  commands: Map<string, Set<string>>;
  /** Taken by every command (`--debug`). */
  everywhere: string[];
  /** Taken in a command's place: `--help`, `--version`… */
  global: string[];
}

/** The mentions in `markdown` that name nothing that exists. */
function unknownIn(markdown: string, file: string, cli: Cli): string[] {
  return mentionsIn(markdown, file, KINDS)
    .filter((mention) => !notOurs(mention))
    .filter((mention) => {
      if (mention.type === "event") return !KINDS.includes(mention.name);
      if (mention.type === "command") return !cli.commands.has(mention.name);
      if (mention.command === "") return !cli.global.includes(mention.name);
      const flags = cli.commands.get(mention.command ?? "");
      // A flag of an unknown command is reported with its command.
      return flags !== undefined && !flags.has(mention.name) && !cli.everywhere.includes(mention.name);
    })
    .map(
      ({ file: at, line, type, name, command }) =>
        `${at}:${line}: ${type} ${type === "flag" && command ? `${command} ${name}` : name}`,
    );
}

let cli: Cli;
beforeAll(async () => {
  const options = globalOptions(await conclaveOutput(["--help"]));
  cli = {
    commands: await commandFlags(),
    // --json is a command's own flag where it takes one; --version only stands in a command's place.
    everywhere: options.filter((option) => !["--json", "--version", "-V"].includes(option)),
    global: [...options, "--help", "-h"],
  };
}, 120_000);

describe("the guides", () => {
  it("name only commands, flags and event kinds that exist", () => {
    expect(cli.commands.size).toBeGreaterThan(30);
    expect(cli.everywhere).toEqual(["--debug"]);
    const unknown = GUIDES.flatMap((file) => unknownIn(readFileSync(file, "utf8"), file, cli));
    expect(unknown).toEqual([]);
  });

  it("name many of them (the reading finds what it should)", () => {
    const mentions = GUIDES.flatMap((file) => mentionsIn(readFileSync(file, "utf8"), file, KINDS));
    const named = (type: Mention["type"]) => new Set(mentions.filter((m) => m.type === type).map((m) => m.name));
    expect(named("command").size).toBeGreaterThan(30);
    expect(named("flag").size).toBeGreaterThan(50);
    expect(named("event").size).toBeGreaterThan(30);
  });

  it("keep each name of the allow-list in use", () => {
    const mentions = GUIDES.flatMap((file) => mentionsIn(readFileSync(file, "utf8"), file, KINDS));
    const unused = NOT_OURS.filter((entry) => !entry.generated).flatMap(({ file, type, names }) =>
      names.filter((name) => !mentions.some((m) => m.file === file && m.type === type && m.name === name)),
    );
    expect(unused).toEqual([]);
  });
});

describe("reading a guide", () => {
  const read = (markdown: string, file = "docs/example.md") => unknownIn(markdown, file, cli);

  it("reports a command, a flag or an event kind that does not exist, with its line", () => {
    const guide = [
      "# A guide",
      "",
      "Run `conclave frobnicate` first, then:",
      "",
      "```sh",
      "npx conclave send --session me --loud \\",
      '  --json "hi"',
      "```",
      "",
      "The log holds `TURN_STARTED`, then `TURN_EXPLODED`.",
    ].join("\n");
    expect(read(guide)).toEqual([
      "docs/example.md:3: command frobnicate",
      "docs/example.md:6: flag send --loud",
      "docs/example.md:10: event TURN_EXPLODED",
    ]);
  });

  it("gives a flag to its own command: nested, piped, quoted, after --", () => {
    const guide = [
      "```sh",
      `conclave up --exec "conclave send --session s --nope hi"`,
      "conclave events --session s --json | jq --raw-output .kind",
      "conclave send --session s -- --not-a-flag",
      "conclave run recipe.yaml --input '{\"--x\": 1}' # --comment",
      "```",
    ].join("\n");
    expect(read(guide)).toEqual(["docs/example.md:2: flag send --nope"]);
  });

  it("reads alternatives, wrapped spans and docs/commands.md's bare command lines", () => {
    const guide = [
      "| command | what it does |",
      "| --- | --- |",
      "| `cancel --session S (N \\| --turn N)` · `frob \\| send` | … |",
      "",
      "- `send` prints; `--timeout` and `--lateness` bound it, `conclave approve|deny` answers, and",
      "  `conclave replay --from-start",
      "  --sideways` folds.",
    ].join("\n");
    expect(read(guide, "docs/commands.md")).toEqual([
      "docs/commands.md:3: command frob",
      "docs/commands.md:5: flag send --lateness",
      "docs/commands.md:6: flag replay --sideways",
    ]);
    // Elsewhere a table's spans are only code: `send --session` is not read as a command line.
    expect(read("| command |\n| --- |\n| `frob --x` |")).toEqual([]);
  });

  it("does not read paths, subjects, variables or other programs as ours", () => {
    const guide = [
      "`src/conclave/x`, `@conclave/agents`, `conclave.wal.<p>`, `CONCLAVE_EVENTS_0`, `OTEL_SDK_DISABLED`,",
      "`nats-server --jetstream`, `npm run --silent build`, `conclave src/bus`, `MAX_TURN_ATTEMPTS`.",
    ].join("\n");
    expect(read(guide)).toEqual([]);
  });
});
