/**
 * How the CLI reports a failure: every error a command raises becomes one
 * line (or, with `--json`, one JSON object) and a documented exit status.
 * Errors are told apart by class and stable `code`, never by their message.
 */
import { JetStreamApiCodes, JetStreamApiError } from "@nats-io/jetstream";
import {
  AuthorizationError,
  ClosedConnectionError,
  ConnectionError,
  NoRespondersError,
  TimeoutError,
} from "@nats-io/nats-core";
import { NatsUnreachableError, RemoteCallError } from "../bus/errors.ts";
import { printable } from "../client/printable.ts";
import type { ErrorCode } from "../contracts/errors.ts";
import { ConclaveError, type ConclaveErrorCode, isConclaveError, messageOf, singleLine } from "../errors.ts";

/** The exit statuses of every `conclave` command. */
export const EXIT = {
  /** The command did what was asked (an empty result included). */
  ok: 0,
  /** A turn failed, was refused as busy or interrupted, or did not complete in time; or `replay` found a difference. */
  turnFailed: 1,
  /** The command line or the configuration is wrong (flags, environment, credentials, a port in use). */
  usage: 2,
  /** Something the command needs is not there: NATS unreachable, no runner or worker answering, nats-server or an optional package not installed. */
  unavailable: 3,
  /** Anything else: a bug or an unexpected answer; `--debug` shows the stack. */
  internal: 4,
  /** (`run`, `resume`, `send`) The run or turn is suspended, waiting for an answer (a human node, an approval). */
  suspended: 5,
} as const;

export type ExitStatus = (typeof EXIT)[keyof typeof EXIT];

/** The "Exit status" section of every command's help. */
export const EXIT_HELP = `Exit status: ${EXIT.ok} success · ${EXIT.turnFailed} turn failed or did not complete · ${EXIT.usage} usage or configuration error
             ${EXIT.unavailable} unavailable (NATS, a runner or a worker) · ${EXIT.internal} internal error
             ${EXIT.suspended} (run, resume) the recipe run is suspended at a human node, waiting for an answer
Failures print one line on stderr; with --json, one {"error":{"code","message"}} line on stderr.
--debug (or CONCLAVE_DEBUG=1) adds the stack.`;

/** A failure as the CLI reports it. */
export interface Failure {
  /** A stable code: a ConclaveError's own, or the one given here to a library's error. */
  code: ConclaveErrorCode;
  /** One line, no stack. */
  message: string;
  exit: ExitStatus;
}

const EXIT_BY_CODE: Partial<Record<ConclaveErrorCode, ExitStatus>> = {
  usage: EXIT.usage,
  invalid_recipe: EXIT.usage,
  invalid_memory_graph: EXIT.usage,
  config: EXIT.usage,
  insecure_credentials: EXIT.usage,
  unauthorized: EXIT.usage,
  unknown_agent: EXIT.usage,
  unknown_critic: EXIT.usage,
  invalid_agent: EXIT.usage,
  invalid_tool: EXIT.usage,
  delegation_depth_exceeded: EXIT.turnFailed,
  port_in_use: EXIT.usage,
  turn_timeout: EXIT.turnFailed,
  turn_failed: EXIT.turnFailed,
  turn_suspended: EXIT.suspended,
  unavailable: EXIT.unavailable,
  nats_server_not_found: EXIT.unavailable,
  missing_dependency: EXIT.unavailable,
};

/** What a refusal from a remote actor means for the caller. */
const EXIT_BY_REMOTE_CODE: Record<ErrorCode, ExitStatus> = {
  bad_json: EXIT.usage,
  invalid_request: EXIT.usage,
  payload_too_large: EXIT.usage,
  busy: EXIT.turnFailed,
  interrupted: EXIT.turnFailed,
  cancelled: EXIT.turnFailed,
  not_found: EXIT.usage,
  forbidden: EXIT.usage,
  conflict: EXIT.usage,
  agent_failed: EXIT.turnFailed,
  invalid_agent_output: EXIT.turnFailed,
  tool_failed: EXIT.turnFailed,
  delegation_depth_exceeded: EXIT.turnFailed,
  no_responders: EXIT.unavailable,
  timeout: EXIT.unavailable,
  unknown_subject: EXIT.internal,
  internal: EXIT.internal,
  unavailable: EXIT.unavailable,
  format_too_new: EXIT.unavailable,
};

const START_HINT = "`npx conclave up` starts NATS, a runner and the workers.";
const MAX_MESSAGE = 1_000;

/** Classifies anything a command threw. */
export function describeFailure(error: unknown): Failure {
  const one = (code: ConclaveErrorCode, message: string, exit: ExitStatus): Failure => ({
    code,
    message: singleLine(message, MAX_MESSAGE),
    exit,
  });
  if (error instanceof RemoteCallError) {
    const issues = error.issues && error.issues.length > 0 ? ` (${error.issues.join("; ")})` : "";
    const hint = error.code === "no_responders" ? `: is a runner up? ${START_HINT}` : "";
    return one(error.code, `${error.message}${issues}${hint}`, EXIT_BY_REMOTE_CODE[error.code]);
  }
  if (isConclaveError(error))
    return one(
      error.code,
      error.message,
      EXIT_BY_CODE[error.code] ??
        (error.code in EXIT_BY_REMOTE_CODE ? EXIT_BY_REMOTE_CODE[error.code as ErrorCode] : EXIT.internal),
    );
  // The NATS client's own errors, by class.
  if (error instanceof NatsUnreachableError) {
    const cause = error.cause instanceof Error ? error.cause.message : error.message;
    const at = error.servers.join(", ");
    return one("unavailable", `cannot reach NATS at ${at} (${cause}); is it running? ${START_HINT}`, EXIT.unavailable);
  }
  if (error instanceof ConnectionError)
    return one("unavailable", `cannot reach NATS (${error.message}); is it running? ${START_HINT}`, EXIT.unavailable);
  if (error instanceof TimeoutError || error instanceof NoRespondersError || error instanceof ClosedConnectionError)
    return one("unavailable", `NATS did not answer (${error.message}); is it running? ${START_HINT}`, EXIT.unavailable);
  if (error instanceof AuthorizationError)
    return one("unauthorized", `NATS refused the credentials (${error.message}); check --user/--password`, EXIT.usage);
  if (error instanceof JetStreamApiError && error.code === JetStreamApiCodes.StreamNotFound)
    return one(
      "unavailable",
      `nothing is stored yet (${error.message}); has a runner run a turn on this server?`,
      EXIT.unavailable,
    );
  return one("internal", messageOf(error), EXIT.internal);
}

/** The one line printed on stderr for a failure of `command`. */
export function failureLine(command: string, failure: Failure, json: boolean): string {
  return json
    ? JSON.stringify({ error: { code: failure.code, message: failure.message } })
    : // A remote error's message is a peer's text: no control sequence of it reaches the terminal.
      printable(
        `${command}: ${failure.message}${failure.exit === EXIT.usage && failure.code === "usage" ? ` (see ${command} --help)` : ""}`,
      );
}

/** The stack of an error and of its causes, for `--debug`. */
export function stackOf(error: unknown): string {
  const parts: string[] = [];
  let current: unknown = error;
  for (let depth = 0; current !== undefined && depth < 5; depth++) {
    parts.push(current instanceof Error ? (current.stack ?? current.message) : String(current));
    current = current instanceof Error ? current.cause : undefined;
  }
  return printable(parts.join("\ncaused by: "));
}

/** Something a command needs is not there (no NATS server to use, a process that would not start). */
export class UnavailableError extends ConclaveError<"unavailable"> {
  constructor(message: string) {
    super("unavailable", message);
  }
}
