/**
 * Recipes: Coreason manifests (`apiVersion: coreason.ai/v2`) loaded,
 * checked and compiled to statecharts. Run one with the client's `run`
 * (or `conclave run FILE`); a runner hosts it.
 */

export type { BlackboardOptions } from "../blackboard/open.ts";
export { type ConstraintResult, checkConstraints } from "./constraints.ts";
export { conditionHolds, type Expr, parseExpression, RecipeExpressionError } from "./expression.ts";
export {
  agentRefsOf,
  checkAgentRefs,
  type LoadOptions,
  loadRecipe,
  loadRecipeFile,
  parseRecipeText,
  type RecipeIssue,
  RecipeValidationError,
} from "./load.ts";
export type {
  AgentNode,
  Constraint,
  ConstraintOperator,
  CouncilNode,
  EvaluatorNode,
  HumanNode,
  LogicNode,
  NodeKind,
  Persistence,
  Provenance,
  Recipe,
  RecipeNode,
  RecipePolicy,
  RouterNode,
  SwitchNode,
  Transition,
} from "./recipe.ts";
export {
  CONSTRAINT_OPERATORS,
  DEFAULT_POLICY,
} from "./recipe.ts";
export { recipeJsonSchemas } from "./schema.ts";
