import { fromCallback, fromPromise } from "xstate";
import type {
  RecipeAgentCall,
  RecipeAgentEvent,
  RecipeCouncilCall,
  RecipeCouncilResult,
  RecipeLogicCall,
  RecipePersistCall,
} from "../../src/contracts/recipeProtocol.ts";
import type { JsonObject } from "../../src/contracts/recipeRun.ts";
import { MissingActorError } from "../errors.ts";

const unprovided = <O, I>(name: string) =>
  fromPromise<O, I>(async () => {
    throw new MissingActorError(name, "recipe");
  });

/**
 * A recipe run's invoked actors, by name, with their input and output types.
 * None runs anything: the host provides each with `machine.provide(...)`.
 */
export const recipeActors = {
  /** The session's stored blackboard (null: none yet). */
  loadBlackboard: unprovided<JsonObject | null, { session_id: string; turn_id: number }>("loadBlackboard"),
  /** One agent call; sends back its stream parts, then `node.answered` or `node.failed`. */
  callAgent: fromCallback<{ type: "noop" }, RecipeAgentCall, RecipeAgentEvent>(() => {
    throw new MissingActorError("callAgent", "recipe");
  }),
  runCouncil: unprovided<RecipeCouncilResult, RecipeCouncilCall>("runCouncil"),
  runLogic: unprovided<unknown, RecipeLogicCall>("runLogic"),
  /** Saves the blackboard (and, at the end, checks it against the recipe's outputs schema). */
  persist: unprovided<void, RecipePersistCall>("persist"),
};
