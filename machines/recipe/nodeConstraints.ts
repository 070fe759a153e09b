/**
 * The recipe's `requirements`, checked again before each node runs: the
 * pre-flight check sees the blackboard before any node, this one sees it as
 * the nodes before have left it. Every constraint applies to every node
 * (RECIPES.md scopes no constraint to a node).
 */
import { assign, enqueueActions } from "xstate";
import type { TurnRecord } from "../../src/contracts/turnProtocol.ts";
import { type ConstraintResult, checkConstraints } from "../../src/recipes/constraints.ts";
import type { Recipe, RecipeNode } from "../../src/recipes/recipe.ts";
import type { RecipeContext } from "./context.ts";
import type { Args, Enqueue, Exits } from "./frame.ts";

/** Where a constraint is in the recipe's `requirements`: what `constraint_warned` holds. */
const indexOf = (recipe: Recipe, result: ConstraintResult) => recipe.constraints.indexOf(result.constraint);

/** The STAGE_WARNING of an optional constraint that does not hold. */
export const constraintWarning = (result: ConstraintResult) => ({
  stage: "recipe" as const,
  code: "constraint",
  message: result.message,
  subject: result.constraint.variable,
});

/**
 * The transitions of a node's `entering` for its constraints: a required
 * constraint that does not hold fails the node (NODE_STARTED, then
 * NODE_FAILED with the constraint's error_message; no retry, since the
 * blackboard would not change) and the run with code `constraint_failed`.
 * `visit` is what starting the node does (count it, record NODE_STARTED).
 */
export function constraintFailure(recipe: Recipe, node: RecipeNode, exits: Exits, visit: readonly unknown[]) {
  if (recipe.constraints.length === 0) return [];
  const failedOf = (context: RecipeContext) => checkConstraints(recipe.constraints, context.blackboard).failed;
  const messageOf = (context: RecipeContext) =>
    failedOf(context)
      .map((failure) => failure.message)
      .join("; ");
  return [
    {
      guard: ({ context }: Args) => failedOf(context).length > 0,
      target: exits.failing,
      actions: [
        ...visit,
        {
          type: "record",
          params: ({ context }: Args): TurnRecord => ({
            kind: "NODE_FAILED",
            payload: {
              node: node.id,
              kind: node.kind,
              code: "constraint_failed",
              message: messageOf(context),
              attempt: 1,
              retrying: false,
            },
          }),
        },
        assign(({ context }: Args) => ({
          failure: { code: "constraint_failed", message: `node '${node.id}': ${messageOf(context)}` },
        })),
      ],
    },
  ];
}

/**
 * Records a STAGE_WARNING for each optional constraint that does not hold
 * before the node, once per run: a constraint already warned about (at the
 * pre-flight check or an earlier node) is not repeated.
 */
export const constraintWarnings = (recipe: Recipe) =>
  enqueueActions(({ context, enqueue }: Args & { enqueue: Enqueue }) => {
    if (recipe.constraints.length === 0) return;
    const fresh = checkConstraints(recipe.constraints, context.blackboard).warnings.filter(
      (warning) => !context.constraint_warned.includes(indexOf(recipe, warning)),
    );
    if (fresh.length === 0) return;
    const warnings = fresh.map(constraintWarning);
    enqueue.assign({
      warnings: [...context.warnings, ...warnings],
      constraint_warned: [...context.constraint_warned, ...fresh.map((warning) => indexOf(recipe, warning))],
    });
    for (const warning of warnings) enqueue({ type: "record", params: { kind: "STAGE_WARNING", payload: warning } });
  });

/** The indexes of the optional constraints in `warnings` (what the pre-flight check warned about). */
export const warnedIndexes = (recipe: Recipe, warnings: readonly ConstraintResult[]) =>
  warnings.map((warning) => indexOf(recipe, warning));
