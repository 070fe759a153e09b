/**
 * One tool per recipe of a directory (`conclave serve --recipes DIR`): each
 * recipe file is loaded and checked as `conclave run` checks it, named from
 * the recipe's name, and takes the recipe's `interface.inputs` as its
 * arguments. A call runs the recipe in a new session and follows it until it
 * completes or suspends (at a human node, or waiting for an approval).
 */
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { submitTurn } from "../client/turns.ts";
import { ConfigError } from "../config/variable.ts";
import type { JsonObject } from "../contracts/recipeRun.ts";
import { followRun } from "../eventlog/followRun.ts";
import { readRecipeForRunner } from "../recipes/load.ts";
import type { Recipe } from "../recipes/recipe.ts";
import { newSessionId } from "./converse.ts";
import { sessionOf } from "./principals.ts";
import { runResult } from "./results.ts";
import type { GatewayTool, ToolLimits } from "./tools.ts";

/** The file names read as recipes. */
const RECIPE_FILE = /\.(ya?ml|json)$/i;

/** A recipe's tool name: its name with anything but A-Z a-z 0-9 _ - made `_`, up to 64 characters. */
export function toolNameOf(recipeName: string): string {
  const name = recipeName.replace(/[^A-Za-z0-9_-]/g, "_").slice(0, 64);
  return name === "" ? "recipe" : name;
}

/** A recipe file loaded for the gateway. */
export interface LoadedRecipe {
  file: string;
  document: JsonObject;
  recipe: Recipe;
}

/**
 * The recipes of `dir`, each checked (a RecipeValidationError naming the file
 * and each issue's path, exit 2); two that would have the same tool name, or
 * one named `converse`, are a ConfigError naming both.
 */
export function loadRecipeDir(dir: string, taken: readonly string[] = ["converse"]): LoadedRecipe[] {
  let names: string[];
  try {
    names = readdirSync(dir).filter((name) => RECIPE_FILE.test(name));
  } catch (error) {
    throw new ConfigError(`cannot read --recipes ${dir}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`);
  }
  const byTool = new Map<string, string>(taken.map((name) => [name, "a tool of the gateway's own"]));
  return names.sort().map((name) => {
    const file = join(dir, name);
    const { document, recipe } = readRecipeForRunner(file, (message) => new ConfigError(message));
    refuseIgnoredPersistence(file, document as JsonObject, recipe);
    const tool = toolNameOf(recipe.name);
    const other = byTool.get(tool);
    if (other !== undefined)
      throw new ConfigError(`${file}: its tool name '${tool}' is taken by ${other}; rename the recipe`);
    byTool.set(tool, file);
    return { file, document: document as JsonObject, recipe };
  });
}

/**
 * A workflow recipe keeps its state where `state.backend` says; a
 * `state.persistence` (the graph recipes' field) would be silently ignored,
 * so it is refused (ConfigError, exit 2) naming the field to use.
 */
function refuseIgnoredPersistence(file: string, document: JsonObject, recipe: Recipe): void {
  const state = document.state;
  if (recipe.shape !== "workflow" || typeof state !== "object" || state === null || Array.isArray(state)) return;
  if (!("persistence" in state)) return;
  throw new ConfigError(
    `${file}: state.persistence is not read in a workflow recipe; say where its state is kept with state.backend (memory, redis or postgres)`,
  );
}

/** The recipe's inputs as a tool's input schema: `interface.inputs`, or any object when it declares none. */
function inputSchemaOf(recipe: Recipe): GatewayTool["inputSchema"] {
  const schema = recipe.inputs_schema ?? {};
  return { ...schema, type: "object" };
}

/** What a recipe tool's result's `structuredContent` holds: a completed run's output, or where it waits. */
const RUN_OUTPUT_SCHEMA: NonNullable<GatewayTool["outputSchema"]> = {
  type: "object",
  properties: {
    status: { type: "string", enum: ["completed", "suspended"] },
    session_id: { type: "string" },
    turn_id: { type: "integer", minimum: 1 },
    outcome: { type: "object", description: "How a completed run ended." },
    output: { description: "A completed run's final blackboard." },
    node: { type: "string", description: "Where a suspended run waits." },
    prompt: { type: "string" },
    required_role: { type: "string" },
    expires_at: { type: "string" },
    approval: { type: "object" },
    answer_with: { type: "string", description: "The command that answers a suspended run." },
  },
  required: ["status", "session_id", "turn_id"],
};

/** The tool that runs `loaded`. */
export function recipeTool(loaded: LoadedRecipe, limits: ToolLimits): GatewayTool {
  const { recipe, document } = loaded;
  const human = recipe.nodes.some((node) => node.kind === "human");
  return {
    name: toolNameOf(recipe.name),
    description:
      `Run the recipe '${recipe.name}'${recipe.description ? `: ${recipe.description}` : ""}. ` +
      "Returns the run's final blackboard" +
      (human ? ", or, when it waits at a human node, where it waits and the command that answers it." : "."),
    inputSchema: inputSchemaOf(recipe),
    outputSchema: RUN_OUTPUT_SCHEMA,
    async call(client, args, { signal, progress, principal, onSession }) {
      signal.throwIfAborted();
      const sessionId = sessionOf(principal, newSessionId("run"));
      onSession?.(sessionId);
      const ack = await submitTurn(client.nc, sessionId, { recipe: { document, inputs: args as JsonObject } });
      const cancel = () => {
        client.cancel(ack.session_id, ack.turn_id, "cancelled by the MCP client").catch(() => {});
      };
      if (signal.aborted) cancel();
      else signal.addEventListener("abort", cancel, { once: true });
      try {
        const run = await followRun(client.nc, ack.session_id, ack.turn_id, {
          onEvent: (event) => progress.event(event),
          timeoutMs: limits.timeoutMs,
        });
        return runResult(run);
      } finally {
        signal.removeEventListener("abort", cancel);
      }
    },
  };
}
