/**
 * Conclave: an actor-model multi-agent runtime on XState and NATS.
 *
 * The root entry is the core: define agents and tools (`defineAgent`,
 * `defineTool`), serve them (`startWorker`), run turns (`startRunner`), serve
 * callers without NATS (`startGateway`), talk to Conclave (`connect`), and the
 * errors these raise. The rest has an entry point of its own:
 * - `conclave/worker`: writing and serving agents and tools, and their skills;
 * - `conclave/client`: the client API (turns, events, recipe runs, ledgers, memory, approvals),
 *   with the errors a turn raises;
 * - `conclave/recipes`: recipe documents loaded and checked, run in this process, and their traces,
 *   with the model interceptors and `logic` handlers a runner or an in-process run takes.
 *
 * A test (test/package/rootEntry.test.ts) holds this entry to at most 60 names.
 *
 * @packageDocumentation
 */

export { UnknownAgentError } from "./agents/builtins.ts";
export {
  type AgentDefinition,
  AgentDefinitionError,
  type AgentRunContext,
  type AgentSpec,
  defineAgent,
} from "./agents/defineAgent.ts";
export type { BlackboardOptions } from "./blackboard/open.ts";
export {
  type BusAccess,
  BusConfigError,
  type BusOptions,
  InsecureCredentialsError,
  type TlsFiles,
} from "./bus/connection.ts";
export { type ConclaveClient, type ConnectOptions, connect } from "./client/client.ts";
export { BYTES_PER_TOKEN, type EncodingName, type Tokenizer } from "./context/tokenizer.ts";
export type { ArenaPolicy, CompactionSettings, ContextBudget } from "./contracts/context.ts";
export type { ErrorCode } from "./contracts/errors.ts";
export type { PipelineChoice } from "./contracts/pipeline.ts";
export type { TurnPolicy } from "./contracts/turnProtocol.ts";
export {
  ConclaveError,
  type ConclaveErrorCode,
  isConclaveError,
  type LlmErrorCode,
  type LocalErrorCode,
} from "./errors.ts";
export type { RetentionOptions } from "./eventlog/retention.ts";
export {
  type GatewayHandle,
  type StartGatewayOptions,
  startGateway,
} from "./gateway/startGateway.ts";
export type { LlmConfig } from "./llm/config.ts";
export { type Embedder, EmbeddingError } from "./llm/embeddings.ts";
export { LlmError, type LlmErrorOptions } from "./llm/errors.ts";
export type { AdmissionLimits } from "./runtime/runner/admission.ts";
export type { RecipeRunnerOptions, RunnerOptions } from "./runtime/runner/options.ts";
export { type RunnerHandle, type StartRunnerOptions, startRunner } from "./runtime/startRunner.ts";
export type { WorkingMemoryOptions } from "./runtime/toolCalls/workingMemory.ts";
export { TracingConfigError } from "./telemetry/config.ts";
export type { LogFields, Logger } from "./telemetry/log.ts";
export { setupTracing, type TracingHandle, type TracingSetupOptions } from "./telemetry/setup.ts";
export {
  defineTool,
  type ToolDefinition,
  ToolDefinitionError,
  type ToolRunContext,
  type ToolSpec,
} from "./tools/defineTool.ts";
export { startWorker } from "./workers/startWorker.ts";
export type { WorkerHandle, WorkerOptions } from "./workers/workerOptions.ts";
