import type { Recipe } from "./recipe.ts";
import type { RecipeIssue } from "./text.ts";

/** Every agent a recipe calls, with where: agent nodes, judges, voters. */
function agentCalls(recipe: Recipe): { at: string; id: string }[] {
  return recipe.nodes.flatMap((node) => {
    if (node.kind === "agent") return [{ at: node.at, id: node.agent }];
    if (node.kind === "evaluator") return [{ at: node.at, id: node.judge }];
    if (node.kind === "council") return node.voters.map((id) => ({ at: node.at, id }));
    return [];
  });
}

/** The Conclave agent ids a recipe calls: agent nodes, judges, voters. */
export function agentRefsOf(recipe: Recipe): string[] {
  return [...new Set(agentCalls(recipe).map((call) => call.id))];
}

/** The recipe's references to agents no live worker hosts, each naming its node (an agent node's remote A2A agent is not hosted). */
export function checkAgentRefs(recipe: Recipe, known: ReadonlySet<string>): RecipeIssue[] {
  const listed = [...known].sort().slice(0, 8).join(", ") || "none";
  const remote = new Set(
    recipe.nodes.flatMap((node) => (node.kind === "agent" && recipe.remote_agents?.[node.agent] ? [node.at] : [])),
  );
  return agentCalls(recipe)
    .filter((call) => !known.has(call.id) && !remote.has(call.at))
    .map((call) => ({ path: call.at, message: `no live worker hosts agent '${call.id}' (live: ${listed})` }));
}
