import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { connectBus } from "../../bus/connection.ts";
import { connect } from "../../client/client.ts";
import type { EngineEvent } from "../../contracts/events.ts";
import type { JsonObject } from "../../contracts/recipeRun.ts";
import { loadRecipe, parseRecipeText, RecipeValidationError } from "../../recipes/load.ts";
import type { Recipe } from "../../recipes/recipe.ts";
import { CONNECTION_FLAGS, CONNECTION_HELP, connectionFrom, parse, sessionArg, UsageError } from "../args.ts";
import { EXIT_HELP } from "../failures.ts";
import { printRunResult } from "../recipeResult.ts";
import { createEventPrinter } from "../render.ts";

export const help = `conclave run: run a recipe (a Coreason manifest) and stream it as it runs

Usage: conclave run FILE [--input JSON] [--session ID] [--json] [options]

  FILE                 a recipe document, YAML or JSON (either Coreason shape)
  --input JSON         the run's inputs, a JSON object (checked against interface.inputs)  [{}]
  --session ID         the session to run it in (its blackboard carries over)  [a new one]
  --json               one JSON event per line, then {"result": …}
  --user-id ID         who is running it
  --idempotency-key K  a key that identifies this run: repeated, it runs once
  --timeout MS         patience until the run completes or suspends  [120000]

Prints each node as it runs, its agents' default streams token by token as
they come, the routes taken, then the final blackboard. Exit 0 when the run completed (Complete or PartialSuccess),
1 when it Failed or was Cancelled (or did not complete or suspend within
--timeout), 2 for a recipe or inputs that are refused (one line, naming each
issue's path: checked here first, then by the runner, which also knows its
agents), 5 when it is suspended at a human node: the command prints how to
answer it (conclave resume), so a script can tell waiting from done.
--user-id is who runs it (--user is the NATS user).

${CONNECTION_HELP}

${EXIT_HELP}`;

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

export async function run(argv: string[]): Promise<number> {
  const { values, positionals } = parse(
    argv,
    {
      ...CONNECTION_FLAGS,
      input: { type: "string", short: "i" },
      session: { type: "string", short: "s" },
      json: { type: "boolean" },
      "user-id": { type: "string" },
      "idempotency-key": { type: "string" },
      timeout: { type: "string" },
    },
    true,
  );
  if (values.help) {
    console.log(help);
    return 0;
  }
  if (positionals.length !== 1) throw new UsageError("give one recipe file, e.g. conclave run recipes/triage.yaml");
  const file = positionals[0]!;
  const inputs = inputArg(values.input);
  const timeoutMs = Number(values.timeout ?? 120_000);
  if (!Number.isFinite(timeoutMs) || timeoutMs <= 0)
    throw new UsageError("--timeout must be a positive number of milliseconds");
  const session = values.session ? sessionArg(values.session) : `run-${randomBytes(4).toString("hex")}`;
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (error) {
    throw new UsageError(`cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? error}`);
  }
  const document = parseRecipeText(text, file) as JsonObject;
  // Checked here first for a fast, local answer (the runner checks it again, with its agents and handlers).
  let recipe: Recipe;
  try {
    recipe = loadRecipe(document, { logicHandlers: logicStepsOf(document) });
  } catch (error) {
    if (error instanceof RecipeValidationError) throw new RecipeValidationError(error.issues, file);
    throw error;
  }
  if (!values.json) console.log(`running recipe '${recipe.name}' in session ${session}`);

  const nc = await connectBus(connectionFrom(values, "client", false));
  try {
    const client = await connect({ nc });
    const print = createRunPrinter(values.json);
    const result = await client.run(session, document, {
      inputs,
      timeoutMs,
      onEvent: print,
      ...(values["user-id"] ? { userId: values["user-id"] } : {}),
      ...(values["idempotency-key"] ? { idempotencyKey: values["idempotency-key"] } : {}),
    });
    return printRunResult(result, { json: values.json });
  } finally {
    await nc.close();
  }
}

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
          out.write(`        ${id} › `);
        } else held.set(id, "");
        return;
      case "STREAM_CHUNK":
        if (id === inline) out.write(event.payload.delta);
        else held.set(id, (held.get(id) ?? "") + event.payload.delta);
        return;
      case "STREAM_END":
        if (id === inline) {
          out.write("\n");
          inline = null;
        } else {
          out.write(`        ${id} › ${held.get(id) ?? ""}\n`);
          held.delete(id);
        }
        return;
      default:
        return print(event);
    }
  };
}

/** The workflow's logic steps: whether the runner has their handlers is the runner's to say. */
function logicStepsOf(document: JsonObject): string[] {
  const steps = (document.workflow as { steps?: Record<string, { type?: unknown }> } | undefined)?.steps ?? {};
  return Object.entries(steps).flatMap(([id, step]) => (step?.type === "logic" ? [id] : []));
}
