/** The nodes whose work is one invoked promise actor: workflow `logic` and `council` steps. */
import { agentPrompt } from "../../src/recipes/prompt.ts";
import type { CouncilNode, LogicNode, Recipe } from "../../src/recipes/recipe.ts";
import type { RecipeContext } from "./context.ts";
import {
  type Args,
  completed,
  type Exits,
  edgeTransitions,
  frame,
  type StateConfig,
  stateKey,
  thrownCode,
  thrownMessage,
} from "./frame.ts";

/**
 * A node whose work is one invoked promise actor (`runLogic`, `runCouncil`):
 * its result is written under the node's output key; a failure is retried
 * by policy.
 */
function invokingNodeState(
  recipe: Recipe,
  node: LogicNode | CouncilNode,
  exits: Exits,
  fork: string | null,
  src: "runLogic" | "runCouncil",
  input: (context: RecipeContext) => Record<string, unknown>,
): StateConfig {
  const { entering, failed } = frame(recipe, node, exits);
  return {
    id: `node-${stateKey(node.id)}`,
    initial: "entering",
    states: {
      entering,
      working: {
        invoke: {
          src,
          input: ({ context }: Args) => ({
            session_id: context.session_id,
            turn_id: context.turn_id,
            node: node.id,
            ...input(context),
          }),
          onDone: { target: "routing", actions: completed(recipe, node, node.output_key, ({ event }) => event.output) },
          onError: failed(thrownCode, thrownMessage),
        },
      },
      routing: { always: edgeTransitions(node, exits, fork) },
    },
  };
}

/** A workflow `logic` step: the operator's registered handler computes the result from the blackboard. */
export const logicNodeState = (recipe: Recipe, node: LogicNode, exits: Exits, fork: string | null): StateConfig =>
  invokingNodeState(recipe, node, exits, fork, "runLogic", (context) => ({
    handler: node.handler,
    blackboard: context.blackboard,
  }));

/** A workflow `council` step: every voter answers, the votes are tallied. */
export const councilNodeState = (recipe: Recipe, node: CouncilNode, exits: Exits, fork: string | null): StateConfig =>
  invokingNodeState(recipe, node, exits, fork, "runCouncil", (context) => ({
    voters: node.voters,
    strategy: node.strategy,
    inputs: context.blackboard,
    prompt: agentPrompt(context.blackboard),
  }));
