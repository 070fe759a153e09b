import { randomBytes } from "node:crypto";
import { resolveAgents } from "../../agents/loadAgents.ts";
import { connect } from "../../client/client.ts";
import { printable } from "../../client/printable.ts";
import type { EngineEvent } from "../../contracts/events.ts";
import type { JsonObject } from "../../contracts/recipeRun.ts";
import { readRecipeForRunner } from "../../recipes/load.ts";
import type { Recipe } from "../../recipes/recipe.ts";
import { runRecipeInProcess } from "../../runtime/inProcess/runRecipeInProcess.ts";
import { resolveTools } from "../../tools/loadTools.ts";
import { sessionArg, UsageError } from "../args.ts";
import { defineCommand } from "../command.ts";
import { EXIT } from "../failures.ts";
import { printRunResult } from "../recipeResult.ts";
import { createEventPrinter } from "../render.ts";

const help = `conclave run: run a recipe (a Coreason manifest) and stream it as it runs

Usage: conclave run FILE [--input JSON] [--session ID] [--json] [options]
       conclave run FILE --in-process --agents LIST [--tools LIST] [--dry-run] [--input JSON] [--json]

  FILE                 a recipe document, YAML or JSON (either Coreason shape)
  --input JSON         the run's inputs, a JSON object (checked against interface.inputs)  [{}]
  --session ID         the session to run it in (its blackboard carries over)  [a new one]
  --json               one JSON event per line, then {"result": …}
  --user-id ID         who is running it
  --idempotency-key K  a key that identifies this run: repeated, it runs once
  --timeout MS         patience until the run completes or suspends  [120000]
  --dry-run            every write tool runs its dry run: the output is the plan with its
                       would-be effects, and nothing changes (no approval is asked)

Prints each node as it runs, its agents' default streams token by token as
they come, the routes taken, then the final blackboard. Exit 0 when the run completed (Complete or PartialSuccess),
1 when it Failed or was Cancelled (or did not complete or suspend within
--timeout), 2 for a recipe or inputs that are refused (one line, naming each
issue's path: checked here first, then by the runner, which also knows its
agents), 5 when it is suspended at a human node: the command prints how to
answer it (conclave resume), so a script can tell waiting from done.
--user-id is who runs it (--user is the NATS user).

In-process (no NATS, no runner, no workers: the same recipe run in this process):
  --in-process         run it here; the agents and tools it calls are given below
  --agents LIST        its agents, as for conclave worker --agents: built-in ones by
                       pattern ('*', 'emotion.*') and modules (./my-agents.js)
  --tools LIST         its tools, as for conclave worker --tools: 'builtin', modules
  --dry-run            every write tool runs its dry run instead
A tool call needing approval is refused (nobody can answer it here), and a run
reaching a human node stops there (exit 5): it cannot be resumed. --timeout,
--input, --session and --json work as above.`;

/** The `--input` flag as a JSON object, or a usage error saying why not. */
export function inputArg(value: string | undefined): JsonObject {
  if (value === undefined) return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch (error) {
    throw new UsageError(`--input is not JSON: ${(error as Error).message}`);
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed))
    throw new UsageError('--input must be a JSON object, e.g. --input \'{"topic": "tides"}\'');
  return parsed as JsonObject;
}

/** The flags of `conclave run --in-process` (checkInProcessFlags keeps them to it). */
const IN_PROCESS_FLAGS = {
  "in-process": { type: "boolean" },
  agents: { type: "string" },
  tools: { type: "string" },
  "dry-run": { type: "boolean" },
} as const;

export default defineCommand({
  help,
  flags: {
    ...IN_PROCESS_FLAGS,
    input: { type: "string", short: "i" },
    session: { type: "string", short: "s" },
    json: { type: "boolean" },
    "user-id": { type: "string" },
    "idempotency-key": { type: "string" },
    timeout: { type: "string" },
  },
  positionals: true,
  role: "client",
  async run({ values, positionals, bus }) {
    checkInProcessFlags(values);
    if (positionals.length !== 1) throw new UsageError("give one recipe file, e.g. conclave run recipes/triage.yaml");
    const file = positionals[0]!;
    const inputs = inputArg(values.input);
    const timeoutMs = Number(values.timeout ?? 120_000);
    if (!Number.isFinite(timeoutMs) || timeoutMs <= 0)
      throw new UsageError("--timeout must be a positive number of milliseconds");
    const session = values.session ? sessionArg(values.session) : `run-${randomBytes(4).toString("hex")}`;
    // Checked here first for a fast, local answer (the runner checks it again, with its agents and handlers).
    const { document: parsed, recipe } = readRecipeForRunner(file, (message) => new UsageError(message));
    const document = parsed as JsonObject;
    if (values["in-process"])
      return runInProcess(document, recipe, { inputs, timeoutMs, session: values.session ? session : "local", values });
    if (!values.json) console.log(`running recipe '${recipe.name}' in session ${session}`);

    const client = await connect({ nc: await bus() });
    const print = createRunPrinter(values.json);
    const result = await client.run(session, document, {
      inputs,
      timeoutMs,
      ...(values["dry-run"] ? { dryRun: true } : {}),
      onEvent: print,
      ...(values["user-id"] ? { userId: values["user-id"] } : {}),
      ...(values["idempotency-key"] ? { idempotencyKey: values["idempotency-key"] } : {}),
    });
    return printRunResult(result, { json: values.json });
  },
});

/**
 * Prints a recipe run's events as `createEventPrinter` does, except that an
 * agent's `default` stream (`<node>:default`) is written inline, token by
 * token, as it comes. One stream is inline at a time: one that opens while
 * another is inline (parallel branches), or one that another line interrupts,
 * is printed whole when it ends (its rest, after an interruption). With
 * `json`, one JSON line per event.
 */
export function createRunPrinter(
  json: boolean | undefined,
  out: NodeJS.WritableStream = process.stdout,
): (event: EngineEvent) => void {
  /** The stream written inline, while its line is open. */
  let inline: string | null = null;
  /** Streams printed whole at their end, with what they have said so far. */
  const held = new Map<string, string>();
  const closeInline = () => {
    if (inline === null) return;
    out.write("\n");
    held.set(inline, "… ");
    inline = null;
  };
  // Anything createEventPrinter writes while a stream is inline goes on a line of its own.
  const lines = {
    write: (chunk: string | Uint8Array) => {
      closeInline();
      return out.write(chunk);
    },
  } as NodeJS.WritableStream;
  const print = createEventPrinter(json, lines);
  if (json) return print;
  return (event) => {
    const id = "stream_id" in event.payload ? event.payload.stream_id : "";
    if (!id.endsWith(":default")) return print(event);
    switch (event.kind) {
      case "STREAM_START":
        if (id === inline) out.write("\n"); // a retry: the attempt starts over, on a new line
        if (inline === null || id === inline) {
          inline = id;
          held.delete(id);
          out.write(`        ${printable(id)} › `);
        } else held.set(id, "");
        return;
      case "STREAM_CHUNK":
        if (id === inline) out.write(printable(event.payload.delta));
        else held.set(id, (held.get(id) ?? "") + event.payload.delta);
        return;
      case "STREAM_END":
        if (id === inline) {
          out.write("\n");
          inline = null;
        } else {
          out.write(`        ${printable(id)} › ${printable(held.get(id) ?? "")}\n`);
          held.delete(id);
        }
        return;
      default:
        return print(event);
    }
  };
}

// ---- conclave run --in-process: the recipe runs in this process (runRecipeInProcess), no NATS at all ----

/** Flags of one path given to the other: a usage error, before anything is read. */
function checkInProcessFlags(values: {
  "in-process"?: boolean;
  agents?: string;
  tools?: string;
  "dry-run"?: boolean;
  "user-id"?: string;
  "idempotency-key"?: string;
}): void {
  if (values["in-process"]) {
    if (!values.agents) throw new UsageError("--in-process needs --agents: the agents the recipe calls run here");
    for (const flag of ["user-id", "idempotency-key"] as const)
      if (values[flag] !== undefined) throw new UsageError(`--${flag} needs a runner: not with --in-process`);
    return;
  }
  for (const flag of ["agents", "tools"] as const)
    if (values[flag] !== undefined)
      throw new UsageError(`--${flag} goes with --in-process (a runner uses its workers')`);
}

/** Runs the recipe here, printing its events as they come and its end as `conclave run` does. */
async function runInProcess(
  document: JsonObject,
  recipe: Recipe,
  run: {
    inputs: JsonObject;
    timeoutMs: number;
    session: string;
    values: { agents?: string; tools?: string; "dry-run"?: boolean; json?: boolean };
  },
): Promise<number> {
  const { values } = run;
  const agents = await resolveAgents(values.agents ?? "");
  const tools = values.tools ? await resolveTools(values.tools) : [];
  if (!values.json) console.log(`running recipe '${recipe.name}' in-process (session ${run.session})`);
  const result = await runRecipeInProcess(document, {
    inputs: run.inputs,
    agents,
    tools,
    dryRun: values["dry-run"] === true,
    sessionId: run.session,
    timeoutMs: run.timeoutMs,
    onEvent: createRunPrinter(values.json),
  });
  const turn = { sessionId: run.session, turnId: 1 };
  if (result.status === "completed") {
    const last = result.events.at(-1);
    const response = last?.kind === "TURN_COMPLETED" ? last.payload.response : "";
    return printRunResult(
      { status: "completed", ...turn, outcome: result.outcome, output: result.output, response },
      { json: values.json },
    );
  }
  // Not printRunResult's "answer with conclave resume": nothing holds an in-process run once it returns.
  if (values.json)
    console.log(JSON.stringify({ result: { status: "suspended", ...turn, node: result.node, prompt: result.prompt } }));
  else
    console.log(
      `suspended at '${printable(result.node)}': ${printable(result.prompt)}\n` +
        "an in-process run cannot be resumed: run it on a runner (conclave run without --in-process) to answer it",
    );
  return EXIT.suspended;
}
