/**
 * The one error base of Conclave. Every error the runtime raises on purpose is
 * a `ConclaveError` with a stable `code` (a string callers may switch on, and
 * that never changes meaning between versions), so no caller needs to parse a
 * message or cast an unknown `code` property.
 *
 * Wire codes (`ErrorCode` in `src/contracts/errors.ts`) are what error replies
 * and turn warnings carry; local codes name failures that never cross the
 * wire (a bad command line, a missing binary, a bad configuration).
 */
import type { ErrorCode } from "./contracts/errors.ts";

/** What went wrong in a call to the model (the `code` of an LlmError, one of Conclave's error codes). */
export type LlmErrorCode =
  | "timeout"
  | "rate_limited"
  | "server_error"
  | "invalid_output"
  | "aborted"
  | "bad_request"
  | "connection";

/** Codes of failures that stay in the process that raised them. */
export type LocalErrorCode =
  | "usage"
  /** An agent definition that cannot run (defineAgent, or a module given to `conclave worker --agents`). */
  | "invalid_agent"
  /** A tool definition that cannot run (defineTool). */
  | "invalid_tool"
  /** A model kept asking for tool calls past the loop's `maxRounds`. */
  | "tool_rounds_exhausted"
  | "config"
  | "insecure_credentials"
  | "unauthorized"
  | "unavailable"
  | "turn_timeout"
  | "turn_failed"
  | "turn_suspended"
  | "event_log"
  | "nats_server_not_found"
  | "unknown_agent"
  | "unknown_critic"
  | "missing_actor"
  | "port_in_use"
  | "corrupt_value"
  /** A recipe document that cannot run: the message names the path in the document. */
  | "invalid_recipe"
  /** A recipe run's final blackboard does not match its `interface.outputs`. */
  | "invalid_output"
  /** A skill definition that cannot be used (its file and field named). */
  | "invalid_skill"
  /** A memory graph (node, edge or exported artifact) that cannot be stored: the message names each problem. */
  | "invalid_memory_graph"
  /** An optional package a feature needs (pg, redis, ink and react, @statelyai/inspect) is not installed: the message says what to install. */
  | "missing_dependency";

/** Every code a ConclaveError may carry: wire codes, local codes, and what an LLM call reports (LlmError). */
export type ConclaveErrorCode = ErrorCode | LocalErrorCode | LlmErrorCode;

/** Base of every error Conclave raises on purpose: `code` says what happened, `message` says it to a person. */
export class ConclaveError<C extends ConclaveErrorCode = ConclaveErrorCode> extends Error {
  readonly code: C;
  constructor(code: C, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
  }
}

/** An argument refused before anything is sent: a session id or turn id that cannot be one. */
export class InvalidRequestError extends ConclaveError<"invalid_request"> {
  constructor(message: string) {
    super("invalid_request", message);
  }
}

/** True for any ConclaveError, or one with the given code. */
export function isConclaveError<C extends ConclaveErrorCode>(error: unknown, code?: C): error is ConclaveError<C> {
  return error instanceof ConclaveError && (code === undefined || error.code === code);
}

/** The message of anything thrown, without its stack. */
export const messageOf = (error: unknown): string => (error instanceof Error ? error.message : String(error));

/**
 * The stable code a failure carries: a {@link ConclaveError}'s own, or the
 * string `code` of any other thrown value (NATS, Node and wire errors carry
 * one); `undefined` when it has none. There is no built-in fallback: each
 * caller names the code its own failures have, `codeOf(error) ?? "internal"`.
 */
export function codeOf(error: unknown): string | undefined {
  const code = typeof error === "object" && error !== null && "code" in error ? error.code : undefined;
  return typeof code === "string" ? code : undefined;
}

/** Longest message placed in a NATS header or a log line describing a peer's input. */
export const MAX_HEADER_MESSAGE = 256;

// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]+/g;

/**
 * A message made safe for a NATS header (and any one-line log): control
 * characters (CR and LF above all: nats-core throws on them) become spaces,
 * runs of spaces fold, and it is cut to `max` characters. Peer input quoted
 * in an error (a parse error quotes the bad JSON; a zod error is multi-line)
 * must pass through here before it reaches a header.
 */
export function singleLine(message: string, max = MAX_HEADER_MESSAGE): string {
  const flat = message
    .replace(CONTROL_CHARACTERS, " ")
    .replace(/\s{2,}/g, " ")
    .trim();
  return flat.length <= max ? flat : `${flat.slice(0, max - 3)}...`;
}
