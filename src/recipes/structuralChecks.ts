import { graphShape, RecipeShapeError, targetsOf } from "./forks.ts";
import type { LoadIssues } from "./loadIssues.ts";
import { pathSegments } from "./paths.ts";
import type { Recipe } from "./recipe.ts";
import { StateSchemaError, stateSchemas } from "./stateSchema.ts";

/** Most nodes (or steps) in one recipe. */
export const MAX_RECIPE_NODES = 500;

/** How far `checkStructure` checks a loaded recipe, and what of its document only it can report. */
export interface StructureScope {
  /** Check targets, the entry and forks: a draft topology's structure is only checked when it is to run. */
  structural: boolean;
  /**
   * The graph's edges by index: an edge from a node the recipe does not have
   * belongs to no node's transitions, so only its own entry can report it.
   */
  edges: readonly { source: string }[];
}

/** The structural rules: unique ids, known targets, a known entry, supported forks. */
export function checkStructure(recipe: Recipe, scope: StructureScope, issues: LoadIssues): void {
  if (recipe.nodes.length > MAX_RECIPE_NODES)
    issues.issue("(document)", `${recipe.nodes.length} nodes: at most ${MAX_RECIPE_NODES}`);
  const ids = new Set<string>();
  for (const node of recipe.nodes) {
    if (ids.has(node.id)) issues.issue(`${node.at}.id`, `duplicate node id '${node.id}'`);
    ids.add(node.id);
  }
  // Every blackboard path a node names must be one (no empty segment, nothing that reaches a prototype).
  const path = (at: string, value: string | undefined) => {
    if (value === undefined) return;
    try {
      pathSegments(value);
    } catch (error) {
      issues.issue(at, (error as Error).message);
    }
  };
  for (const node of recipe.nodes) {
    if ("output_key" in node) path(`${node.at}.output_key`, node.output_key);
    if (node.kind === "agent")
      for (const [name, source] of Object.entries(node.inputs_map)) path(`${node.at}.inputs_map.${name}`, source);
    if (node.kind === "router") path(`${node.at}.input_key`, node.input_key);
    if (node.kind === "evaluator") {
      path(`${node.at}.target_variable`, node.target_variable);
      path(`${node.at}.feedback_variable`, node.feedback_variable);
    }
  }
  for (const [index, constraint] of recipe.constraints.entries())
    path(`requirements[${index}].variable`, constraint.variable);
  checkStateSchemas(recipe, issues);
  if (!scope.structural && recipe.status !== "published") return;
  const list = [...ids].slice(0, 12).join(", ");
  if (!ids.has(recipe.entry))
    issues.issue(
      recipe.shape === "graph" ? "topology.entry_point" : "workflow.start",
      `unknown node '${recipe.entry}' (nodes: ${list})`,
    );
  for (const node of recipe.nodes)
    for (const target of targetsOf(node))
      if (!ids.has(target)) issues.issue(node.at, `leads to unknown node '${target}' (nodes: ${list})`);
  scope.edges.forEach((edge, index) => {
    if (!ids.has(edge.source))
      issues.issue(`topology.edges[${index}].source`, `unknown node '${edge.source}' (nodes: ${list})`);
  });
  if (issues.issues.length > 0) return;
  try {
    graphShape(recipe);
  } catch (error) {
    if (error instanceof RecipeShapeError) issues.issues.push(...error.issues);
    else throw error;
  }
}

/** Every variable the recipe's `state` declares has a usable JSON Schema (each write is checked against it). */
function checkStateSchemas(recipe: Recipe, issues: LoadIssues): void {
  if (!recipe.state_properties) return;
  const base = recipe.shape === "graph" ? "state.properties" : "state.data_schema";
  try {
    stateSchemas(recipe.state_properties);
  } catch (error) {
    if (!(error instanceof StateSchemaError)) throw error;
    issues.issue(`${base}.${error.variable}`, error.message.slice(error.variable.length + 4));
  }
}
