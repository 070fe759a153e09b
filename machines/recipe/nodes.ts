import type { Recipe, RecipeNode } from "../../src/recipes/recipe.ts";
import { agentNodeState } from "./agentNode.ts";
import { routerNodeState, switchNodeState } from "./decisionNodes.ts";
import { evaluatorNodeState } from "./evaluatorNode.ts";
import type { Exits, StateConfig } from "./frame.ts";
import { humanNodeState } from "./humanNode.ts";
import { councilNodeState, logicNodeState } from "./invokedNodes.ts";

/**
 * The states of one node. Every node is a compound state
 *
 *   entering (counts the visit, checks max_steps) → working → routing
 *
 * `working` does the node's work (an invoked actor, or nothing for a
 * decision); `routing` takes the first transition whose guard holds. Where a
 * transition leads is the compiler's business (`Exits`): a node inside a
 * fork's branch leaves to its region's end, a node at the top level to the
 * target node's state.
 *
 * Each kind's states are built in its own file: agentNode.ts,
 * evaluatorNode.ts, humanNode.ts, decisionNodes.ts (router, switch) and
 * invokedNodes.ts (logic, council).
 */
export function nodeState(recipe: Recipe, node: RecipeNode, exits: Exits, fork: string | null): StateConfig {
  switch (node.kind) {
    case "agent":
      return agentNodeState(recipe, node, exits, fork);
    case "logic":
      return logicNodeState(recipe, node, exits, fork);
    case "council":
      return councilNodeState(recipe, node, exits, fork);
    case "human":
      return humanNodeState(recipe, node, exits, fork);
    case "router":
      return routerNodeState(recipe, node, exits);
    case "switch":
      return switchNodeState(recipe, node, exits);
    case "evaluator":
      return evaluatorNodeState(recipe, node, exits);
  }
}
