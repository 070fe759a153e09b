import { packageVersion } from "../version.ts";
import type { Command } from "./command.ts";
import { describeFailure, EXIT, EXIT_HELP, failureLine, stackOf } from "./failures.ts";
import { exitQuietlyWhenStdoutCloses } from "./stdio.ts";

/**
 * Every command: its one-line summary, whether it takes `--json` (listed in
 * `--help`; test/cli/help.test.ts checks it against the command's own flags),
 * and its module, whose default export is made with defineCommand
 * (command.ts). Each is loaded only when it runs: `--version` and `--help`
 * need none of them.
 */
const COMMANDS: Record<string, { summary: string; json?: true; load: () => Promise<{ default: Command }> }> = {
  init: {
    summary: "write a new project: an agent with a tool, a recipe, a test, ESM package.json scripts",
    load: () => import("./commands/init.ts"),
  },
  up: {
    summary: "start nats-server, a runner and the workers, until interrupted",
    load: () => import("./commands/up.ts"),
  },
  dev: {
    summary: "up, the gateway and the viewer in one command; your agents reload as you edit them",
    load: () => import("./commands/dev.ts"),
  },
  demo: {
    summary: "run a scripted conversation through the whole pipeline (npm start)",
    load: () => import("./commands/demo.ts"),
  },
  runner: { summary: "host session and turn actors", load: () => import("./commands/runner.ts") },
  worker: {
    summary: "host agents and/or the scheduler, council, critics, memory and knowledge",
    load: () => import("./commands/worker.ts"),
  },
  agents: { json: true, summary: "list the agents live workers host", load: () => import("./commands/agents.ts") },
  status: {
    json: true,
    summary: "the NATS cluster's nodes, and each stream's replicas and health",
    load: () => import("./commands/status.ts"),
  },
  migrate: {
    summary: "move a deployment's stores over to this version (the one-stream event log)",
    load: () => import("./commands/migrate.ts"),
  },
  skills: {
    json: true,
    summary: "list a directory's skills; show which a message loads, and why; activate one for a session",
    load: () => import("./commands/skills.ts"),
  },
  send: { json: true, summary: "publish a user turn and stream its events", load: () => import("./commands/send.ts") },
  chat: { summary: "talk in a terminal UI, watching each turn run live", load: () => import("./commands/chat.ts") },
  events: { json: true, summary: "read a session's event log back", load: () => import("./commands/events.ts") },
  cancel: {
    json: true,
    summary: "stop a turn, wherever it runs (it ends Cancelled)",
    load: () => import("./commands/cancel.ts"),
  },
  context: {
    json: true,
    summary: "a session's context arena: plan and commit a supplement for its next turn",
    load: () => import("./commands/context.ts"),
  },
  session: {
    json: true,
    summary: "erase a session, read its working memory, request a compaction of its context",
    load: () => import("./commands/session.ts"),
  },
  run: {
    json: true,
    summary: "run a recipe (a Coreason manifest) and stream it",
    load: () => import("./commands/run.ts"),
  },
  eval: {
    json: true,
    summary: "run a dataset's cases as turns of an agent or a recipe, score them, exit 1 under a threshold",
    load: () => import("./commands/eval.ts"),
  },
  resume: {
    json: true,
    summary: "answer a recipe run suspended at a human node, and follow it on",
    load: () => import("./commands/resume.ts"),
  },
  trace: {
    json: true,
    summary: "the SimulationTrace of a recipe run, step by step",
    load: () => import("./commands/trace.ts"),
  },
  knowledge: {
    json: true,
    summary: "knowledge collections: add documents, list, search by meaning (with citations), remove",
    load: () => import("./commands/knowledge.ts"),
  },
  memory: {
    json: true,
    summary: "search a session's memory (facts, threads, episodes); export or import its graph",
    load: () => import("./commands/memory.ts"),
  },
  truth: {
    json: true,
    summary: "a session's truth ledger: upsert, resolve, query facts with evidence",
    load: () => import("./commands/truth.ts"),
  },
  task: {
    json: true,
    summary: "a session's task ledger: spec, items, blockers",
    load: () => import("./commands/task.ts"),
  },
  results: {
    json: true,
    summary: "a session's worker results: record, list, merge, clear what work outside the turns reported",
    load: () => import("./commands/results.ts"),
  },
  rollback: {
    json: true,
    summary: "undo a finished turn's executed write tool calls, last first",
    load: () => import("./commands/rollback.ts"),
  },
  schedule: {
    json: true,
    summary: "create, update, cancel and list schedules (turns or recipe runs at times, intervals, cron)",
    load: () => import("./commands/schedule.ts"),
  },
  approvals: {
    json: true,
    summary: "the tool calls waiting for a person's approval",
    load: () => import("./commands/approvals.ts"),
  },
  approve: {
    json: true,
    summary: "approve a tool call a run waits for, and follow the run on",
    load: () => import("./commands/approve.ts"),
  },
  deny: {
    json: true,
    summary: "deny a tool call a run waits for, and follow the run on",
    load: () => import("./commands/deny.ts"),
  },
  turns: {
    json: true,
    summary: "where each turn of a session stands (pending, inflight, suspended, done, failed, expired)",
    load: () => import("./commands/turns.ts"),
  },
  replay: {
    json: true,
    summary: "rebuild a session's state from its event log and check it",
    load: () => import("./commands/replay.ts"),
  },
  fork: {
    json: true,
    summary: "start a new session from another's state at a turn",
    load: () => import("./commands/fork.ts"),
  },
  cost: {
    json: true,
    summary: "what a session's turns cost: tokens and dollars per actor, model, skill and turn",
    load: () => import("./commands/cost.ts"),
  },
  verify: {
    json: true,
    summary: "run a session's checks (log contiguity, outputs, ledgers, replay) with evidence",
    load: () => import("./commands/verify.ts"),
  },
  config: {
    json: true,
    summary: "the effective configuration: each variable, its value (secrets masked), where it came from",
    load: () => import("./commands/config.ts"),
  },
  doctor: {
    json: true,
    summary: "which optional features are installed, and the one npm install line that adds the rest",
    load: () => import("./commands/doctor.ts"),
  },
  schemas: { summary: "write the JSON Schemas of the wire messages", load: () => import("./commands/schemas.ts") },
  graph: { summary: "draw a statechart as Mermaid, DOT or JSON", load: () => import("./commands/graph.ts") },
  recipe: {
    json: true,
    summary: "check or draw a recipe file, or print the recipe JSON Schema",
    load: () => import("./commands/recipe.ts"),
  },
  serve: {
    summary: "a gateway speaking MCP (HTTP or stdio), A2A and AG-UI for callers without NATS",
    load: () => import("./commands/serve.ts"),
  },
  viewer: {
    summary: "watch the statecharts light up as turns run, in a browser (offline)",
    load: () => import("./commands/viewer.ts"),
  },
  inspect: {
    summary: "relay every process's actors to the Stately inspector (needs internet)",
    load: () => import("./commands/inspect.ts"),
  },
};

/** `text` in lines of at most 100 characters, each after `indent`, broken at spaces. */
function wrap(text: string, indent: string): string {
  const lines: string[] = [];
  let line = "";
  for (const word of text.split(" ")) {
    if (line !== "" && indent.length + line.length + 1 + word.length > 100) {
      lines.push(indent + line);
      line = word;
    } else line = line === "" ? word : `${line} ${word}`;
  }
  return [...lines, indent + line].join("\n");
}

const HELP = `conclave: an actor-model multi-agent runtime on XState and NATS

Usage: conclave <command> [options]     (conclave <command> --help for more)
       conclave --version

Commands:
${Object.entries(COMMANDS)
  .map(([name, { summary }]) => `  ${name.padEnd(9)} ${summary}`)
  .join("\n")}

Global options:
  --debug        print the stack of a failure   [$CONCLAVE_DEBUG=1]
  --json         output and failures as JSON, in the commands that take it:
${wrap(
  Object.keys(COMMANDS)
    .filter((name) => COMMANDS[name]?.json)
    .join(", "),
  "                 ",
)}
  -V, --version  print the version

${EXIT_HELP}`;

/** The flags before `--`: after it, everything is a command's positional text. */
const flagsOf = (argv: string[]): string[] => (argv.includes("--") ? argv.slice(0, argv.indexOf("--")) : argv);

async function main(all: string[]): Promise<number> {
  const debug = flagsOf(all).includes("--debug") || ["1", "true"].includes(process.env.CONCLAVE_DEBUG ?? "");
  const dashes = all.indexOf("--");
  const argv = all.filter((arg, index) => arg !== "--debug" || (dashes !== -1 && index > dashes));
  const [name, ...rest] = argv;
  const json = flagsOf(rest).includes("--json");
  if (name === "--version" || name === "-V") {
    console.log(packageVersion());
    return EXIT.ok;
  }
  if (name === "--help" || name === "-h" || name === "help") {
    console.log(HELP);
    return EXIT.ok;
  }
  if (!name) {
    console.error(HELP);
    return EXIT.usage;
  }
  const entry = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  const label = entry ? `conclave ${name}` : "conclave";
  try {
    if (!entry) {
      const { UsageError } = await import("./args.ts");
      throw new UsageError(`unknown command '${name}'; the commands are: ${Object.keys(COMMANDS).join(", ")}`);
    }
    return await (await entry.load()).default.run(rest);
  } catch (error) {
    const failure = describeFailure(error);
    console.error(failureLine(label, failure, json));
    if (debug) console.error(stackOf(error));
    return failure.exit;
  }
}

exitQuietlyWhenStdoutCloses();
// Exit once the command has shut down in order: idle keep-alive sockets (e.g. the
// LLM client's) must not keep a stopped worker alive.
process.exit(await main(process.argv.slice(2)));
