/**
 * Conclave: an actor-model multi-agent runtime on XState and NATS.
 *
 * The root entry is the core: define agents and tools (`defineAgent`,
 * `defineTool`), serve them (`startWorker`), run turns (`startRunner`), talk
 * to Conclave (`connect`), and the errors these raise. The rest has an entry
 * point of its own:
 * - `conclave/worker`: writing and serving agents and tools;
 * - `conclave/client`: the client API (turns, events, recipe runs, ledgers, memory, approvals);
 * - `conclave/recipes`: recipe documents loaded and checked, run in this process, and their traces.
 *
 * @packageDocumentation
 */

export type { AgentModelChoice, AgentModelSpec } from "./agents/agentModelChoice.ts";
export { DelegationDepthError, ToolCallRefusedError } from "./agents/agentTools.ts";
export {
  type AgentDefinition,
  AgentDefinitionError,
  type AgentRunContext,
  type AgentSpec,
  defineAgent,
  type RemoteDelegate,
} from "./agents/defineAgent.ts";
export { InvalidAgentOutputError } from "./agents/runAgent.ts";
export type { BlackboardOptions } from "./blackboard/open.ts";
export {
  type BusAccess,
  BusConfigError,
  type BusOptions,
  InsecureCredentialsError,
  type TlsFiles,
} from "./bus/connection.ts";
export { type ConclaveClient, type ConnectOptions, connect } from "./client/client.ts";
export { InvalidRequestError, TurnFailedError, TurnSuspendedError, TurnTimeoutError } from "./client/turns.ts";
export type { ArenaPolicy } from "./context/arena.ts";
export type { ContextBudget } from "./context/budget.ts";
export type { CompactionOptions } from "./context/compaction.ts";
export { BYTES_PER_TOKEN, type EncodingName, type Tokenizer } from "./context/tokenizer.ts";
export type { ErrorCode } from "./contracts/errors.ts";
export type { SkillCompletion } from "./contracts/skill.ts";
export type { TurnPolicy } from "./contracts/turnProtocol.ts";
export { ConclaveError, type ConclaveErrorCode, isConclaveError, type LocalErrorCode } from "./errors.ts";
export type { RetentionOptions } from "./eventlog/retention.ts";
export type { LlmConfig } from "./llm/config.ts";
export { type Embedder, EmbeddingError } from "./llm/embeddings.ts";
export { LlmError, type LlmErrorCode, type LlmErrorOptions } from "./llm/errors.ts";
export {
  defaultInterceptors,
  type InterceptorChains,
  type InterceptorContext,
  piiRedaction,
  promptInjectionGuard,
  type RequestInterceptor,
  type ResponseInterceptor,
  type Verdict,
} from "./runtime/interception/interceptors.ts";
export type { LogFields, Logger } from "./runtime/log.ts";
export type { LogicContext, LogicHandler } from "./runtime/recipeHost/recipeActors.ts";
export type { AdmissionLimits } from "./runtime/runner/admission.ts";
export type { RecipeRunnerOptions, RunnerOptions } from "./runtime/runner/options.ts";
export { type RunnerHandle, type StartRunnerOptions, startRunner } from "./runtime/startRunner.ts";
export type { AgentSkill } from "./skills/agentSkills.ts";
export { type AgentSkills, UnknownSkillError } from "./skills/agentSkillsView.ts";
export { LoadStrategy, SkillDefinition, SkillDefinitionError } from "./skills/definition.ts";
export { instructionsOf, loadSkills, type Skill } from "./skills/load.ts";
export {
  SKILL_ROUTER_DEFAULTS,
  type SkillRank,
  SkillRouter,
  type SkillRouterOptions,
  type SkillSelection,
} from "./skills/router.ts";
export { TracingConfigError } from "./telemetry/config.ts";
export { setupTracing, type TracingHandle, type TracingSetupOptions } from "./telemetry/setup.ts";
export {
  defineTool,
  type ToolDefinition,
  ToolDefinitionError,
  type ToolRunContext,
  type ToolSpec,
} from "./tools/defineTool.ts";
export { startWorker, UnknownAgentError, type WorkerHandle, type WorkerOptions } from "./workers/startWorker.ts";
