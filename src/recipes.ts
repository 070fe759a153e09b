/**
 * `conclave/recipes`: recipe documents (`apiVersion: coreason.ai/v2`),
 * loaded and checked (`loadRecipe`, `loadRecipeFile`, `parseRecipeText`), run in
 * this process without NATS (`runRecipeInProcess`), and read back as a
 * simulation trace (`simulationTrace`). To run one on a runner, use the client's
 * `run` (or `conclave run FILE`).
 *
 * @example
 * ```ts
 * import { readFileSync } from "node:fs";
 * import { parseRecipeText, runRecipeInProcess } from "conclave/recipes";
 * import { classifier, billing } from "./agents.js"; // made with defineAgent
 *
 * const document = parseRecipeText(readFileSync("triage.yaml", "utf8"), "triage.yaml") as Record<string, unknown>;
 * const result = await runRecipeInProcess(document, { agents: [classifier, billing], inputs: { message: "Charged twice" } });
 * if (result.status === "completed") console.log(result.outcome.status, result.output);
 * ```
 *
 * @packageDocumentation
 */

/** What an agent is asked: a request interceptor's `onAgentRequest` is given it. */
export type { AgentRequest } from "./contracts/agent.ts";
export type {
  ChatMessage,
  ChatModel,
  CompleteRequest,
  CompleteResult,
  ModelTool,
  ModelToolCall,
  StreamPart,
  StreamRequest,
  StructuredRequest,
  StructuredResult,
  TextStream,
} from "./contracts/model.ts";
export { SimulationStep, SimulationTrace, simulationTraceJsonSchema } from "./contracts/trace.ts";
export { OfflineToolModel } from "./llm/offlineModel.ts";
export type { Expr } from "./recipes/expression.ts";
export { type LoadOptions, loadRecipe, loadRecipeFile } from "./recipes/load.ts";
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
} from "./recipes/recipe.ts";
export { CONSTRAINT_OPERATORS } from "./recipes/recipe.ts";
export { recipeJsonSchemas } from "./recipes/schema.ts";
export { parseRecipeText, type RecipeIssue, RecipeValidationError } from "./recipes/text.ts";
export { describeStep, simulationTrace } from "./recipes/trace.ts";
export {
  type InProcessOptions,
  type InProcessResult,
  runRecipeInProcess,
} from "./runtime/inProcess/runRecipeInProcess.ts";
export {
  AgentRequestRefused,
  type AgentRequestVerdict,
  defaultInterceptors,
  type InterceptorChains,
  type InterceptorContext,
  piiRedaction,
  promptInjectionGuard,
  type RequestInterceptor,
  type ResponseInterceptor,
  type Verdict,
} from "./runtime/interception/interceptors.ts";
export type { LogicContext, LogicHandler } from "./runtime/recipeHost/recipeActors.ts";
