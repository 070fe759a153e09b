/**
 * Conclave: an actor-model multi-agent runtime on XState and NATS.
 *
 * The public API, in three parts (each also its own entry point):
 * - agents and workers (`conclave/worker`): `defineAgent`, `startWorker`;
 * - runners: `startRunner`;
 * - clients (`conclave/client`): `connect`;
 * - recipes: `loadRecipe`, `parseRecipeText` (run them with the client's `run`),
 *   or `runRecipeInProcess`: the same run in this process, without NATS.
 *
 * @packageDocumentation
 */

export type { BusOptions, TlsFiles } from "./bus/connection.ts";
export * from "./client/index.ts";
export type { ErrorCode } from "./contracts/errors.ts";
export {
  type EngineEvent,
  type EventBody,
  EventEnvelope,
  type EventKind,
  type EventPayload,
  EventPayloads,
} from "./contracts/events.ts";
export type { Stage, TurnAck, TurnOutcome, TurnWarning } from "./contracts/turn.ts";
export type { TurnPolicy } from "./contracts/turnProtocol.ts";
export { ConclaveError, type ConclaveErrorCode, isConclaveError, type LocalErrorCode } from "./errors.ts";
export {
  type ChatMessage,
  type ChatModel,
  type CompleteRequest,
  type CompleteResult,
  type LlmConfig,
  type LlmErrorCode,
  llmConfigFromEnv,
  type ModelToolCall,
  OfflineToolModel,
  type StreamPart,
  type StreamRequest,
  type StructuredRequest,
  type StructuredResult,
  type TextStream,
  type ToolSpec,
} from "./llm/index.ts";
export * from "./recipes/index.ts";
export {
  type InProcessOptions,
  type InProcessResult,
  runRecipeInProcess,
} from "./runtime/inProcess/runRecipeInProcess.ts";
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
export type { RecipeRunnerOptions, RunnerOptions } from "./runtime/runner/runner.ts";
export { type RunnerHandle, type StartRunnerOptions, startRunner } from "./runtime/startRunner.ts";
export * from "./worker.ts";
