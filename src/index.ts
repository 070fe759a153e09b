/**
 * Conclave: an actor-model multi-agent runtime on XState and NATS.
 *
 * The public API, in three parts (each also its own entry point):
 * - agents and workers (`conclave/worker`): `defineAgent`, `startWorker`;
 * - runners: `startRunner`;
 * - clients (`conclave/client`): `connect`.
 *
 * @packageDocumentation
 */

export type { BusOptions } from "./bus/connection.ts";
export type { EngineEvent, EventKind, EventPayload } from "./contracts/events.ts";
export type { Stage, TurnAck, TurnOutcome, TurnWarning } from "./contracts/turn.ts";
export type { TurnPolicy } from "./contracts/turnProtocol.ts";
export { ConclaveError, type ConclaveErrorCode, isConclaveError } from "./errors.ts";
export type { LlmConfig } from "./llm/index.ts";
export type { RunnerOptions } from "./runtime/runner/runner.ts";
export { type RunnerHandle, type StartRunnerOptions, startRunner } from "./runtime/startRunner.ts";
export * from "./worker.ts";
