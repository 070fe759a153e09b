/**
 * Loading a recipe: a file or an already parsed document into the `Recipe`
 * Conclave runs. Each document shape is read by its own module
 * (graphRecipe.ts, workflowRecipe.ts); the structural rules both must keep
 * are in structuralChecks.ts.
 */
import { readFileSync } from "node:fs";
import { ConclaveError } from "../errors.ts";
import { graphRecipe } from "./graphRecipe.ts";
import { LoadIssues } from "./loadIssues.ts";
import type { Recipe } from "./recipe.ts";
import { checkStructure, type StructureScope } from "./structuralChecks.ts";
import { parseRecipeText, RecipeValidationError } from "./text.ts";
import { workflowRecipe } from "./workflowRecipe.ts";

// Loading starts from text and ends naming the agents a recipe calls: one import for callers.
export { agentRefsOf, checkAgentRefs } from "./agentRefs.ts";
export { MAX_RECIPE_NODES } from "./structuralChecks.ts";
export { MAX_RECIPE_TEXT, parseRecipeText, type RecipeIssue, RecipeValidationError } from "./text.ts";

/** How `loadRecipe` checks a document. */
export interface LoadOptions {
  /** Names of the logic handlers the runner has: a `logic` step runs only with a handler of its id. */
  logicHandlers?: Iterable<string>;
  /**
   * Check the recipe can run (default): structural problems are errors even
   * in a `draft` topology, abstract agent references and generative nodes
   * are refused. `false` only validates the document (`conclave recipe validate --draft`).
   */
  forRun?: boolean;
}

/** Reads, parses and loads a recipe file. */
export function loadRecipeFile(path: string, options: LoadOptions = {}): Recipe {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    throw new ConclaveError("usage", `cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? error}`);
  }
  try {
    return loadRecipe(parseRecipeText(text, path), options);
  } catch (error) {
    if (error instanceof RecipeValidationError) throw new RecipeValidationError(error.issues, path);
    throw error;
  }
}

/**
 * A recipe file as a client sends it to a runner: its parsed document and the Recipe it loads to,
 * checked here for a fast, local answer, its workflow's logic steps taken as handled (whether the
 * runner has their handlers is the runner's to say). An unreadable file is `unreadable`'s error;
 * an invalid one a RecipeValidationError naming the file.
 */
export function readRecipeForRunner(
  path: string,
  unreadable: (message: string) => Error,
): { document: Record<string, unknown>; recipe: Recipe } {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    throw unreadable(`cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`);
  }
  const document = parseRecipeText(text, path) as Record<string, unknown>;
  const steps = (document.workflow as { steps?: Record<string, { type?: unknown }> } | undefined)?.steps ?? {};
  const logicHandlers = Object.entries(steps).flatMap(([id, step]) => (step?.type === "logic" ? [id] : []));
  try {
    return { document, recipe: loadRecipe(document, { logicHandlers }) };
  } catch (error) {
    if (error instanceof RecipeValidationError) throw new RecipeValidationError(error.issues, path);
    throw error;
  }
}

/**
 * Loads a recipe document (either shape, already parsed) into the `Recipe`
 * Conclave runs: checks it against the format's schema, then the rules the
 * format adds (ids, routes, edges, published recipes, logic steps, agent
 * ids, conditions, forks), collecting every issue. Throws
 * RecipeValidationError naming each issue's path; nothing from the document
 * is ever evaluated.
 */
export function loadRecipe(document: unknown, options: LoadOptions = {}): Recipe {
  if (typeof document !== "object" || document === null || Array.isArray(document))
    throw new RecipeValidationError([{ path: "(document)", message: "a recipe is an object (YAML mapping)" }]);
  const record = document as Record<string, unknown>;
  if (record.apiVersion !== "coreason.ai/v2")
    throw new RecipeValidationError([
      { path: "apiVersion", message: `must be coreason.ai/v2 (got ${JSON.stringify(record.apiVersion)})` },
    ]);
  // Read before the shape is known: `logicHandlers` may be a one-shot iterable, consumed either way.
  const logicHandlers = new Set(options.logicHandlers ?? []);
  const forRun = options.forRun ?? true;
  const issues = new LoadIssues();
  let loaded: { recipe: Recipe; scope: StructureScope } | null = null;
  if ("workflow" in record) {
    const recipe = workflowRecipe(record, issues, logicHandlers);
    // A workflow has no draft status and no edges of its own: its structure is always checked.
    if (recipe) loaded = { recipe, scope: { structural: true, edges: [] } };
  } else if ("topology" in record) loaded = graphRecipe(record, issues, forRun);
  else issues.issue("(document)", "neither `topology` (a graph recipe) nor `workflow` (a workflow manifest)");
  if (loaded) checkStructure(loaded.recipe, loaded.scope, issues);
  if (issues.issues.length > 0 || !loaded) throw new RecipeValidationError(issues.issues);
  return loaded.recipe;
}
