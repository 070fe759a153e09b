import { JetStreamApiCodes, JetStreamApiError } from "@nats-io/jetstream";
import { ConnectionError } from "@nats-io/nats-core";
import { maskUrl } from "../config/mask.ts";
import { ErrorCode, type ErrorReply } from "../contracts/errors.ts";
import { ConclaveError, messageOf, singleLine } from "../errors.ts";
import { encodeJson } from "./codec.ts";
import type { ServiceMsg } from "./service.ts";

/** True when JetStream says the stream (or KV bucket) does not exist: nothing has been stored in it yet. */
export const isStreamNotFound = (error: unknown): boolean =>
  error instanceof JetStreamApiError && error.code === JetStreamApiCodes.StreamNotFound;

/** A request that a remote actor refused or could not answer; `code` says why. */
export class RemoteCallError extends ConclaveError<ErrorCode> {
  readonly subject: string;
  readonly issues: string[] | undefined;
  /** For `busy` when the runners' queues are full: how long to wait before trying again. */
  readonly retryAfterMs: number | undefined;
  constructor(subject: string, code: ErrorCode, message: string, issues?: string[], retryAfterMs?: number) {
    super(code, message);
    this.subject = subject;
    this.issues = issues;
    this.retryAfterMs = retryAfterMs;
  }

  /** The error a peer answered with. */
  static fromReply(subject: string, reply: ErrorReply): RemoteCallError {
    const { code, message, issues, retry_after_ms } = reply.error;
    return new RemoteCallError(subject, code, message, issues, retry_after_ms);
  }
}

/** An error a handler raises on purpose, to be sent back as an error reply with this code. */
export class HandlerError extends ConclaveError<ErrorCode> {
  readonly issues: string[] | undefined;
  /** Sent as `retry_after_ms` (a `busy` answer's hint). */
  readonly retryAfterMs: number | undefined;
  constructor(code: ErrorCode, message: string, issues?: string[], retryAfterMs?: number) {
    super(code, message);
    this.issues = issues;
    this.retryAfterMs = retryAfterMs;
  }
}

/** The HTTP-like status sent in the `Nats-Service-Error-Code` header. */
export const STATUS_BY_CODE: Record<ErrorCode, number> = {
  bad_json: 400,
  invalid_request: 400,
  payload_too_large: 413,
  unknown_subject: 404,
  timeout: 504,
  no_responders: 503,
  agent_failed: 500,
  invalid_agent_output: 502,
  tool_failed: 500,
  delegation_depth_exceeded: 508,
  busy: 409,
  interrupted: 409,
  cancelled: 409,
  not_found: 404,
  forbidden: 403,
  conflict: 409,
  internal: 500,
  unavailable: 503,
  format_too_new: 426,
};

/** Longest message kept in an error reply's body (the peer's input it may quote is cut). */
const MAX_BODY_MESSAGE = 2_000;
const MAX_ISSUES = 20;

export const errorReply = (code: ErrorCode, message: string, issues?: string[], retryAfterMs?: number): ErrorReply => ({
  error: {
    code,
    message: singleLine(message, MAX_BODY_MESSAGE),
    ...(issues && issues.length > 0 ? { issues: issues.slice(0, MAX_ISSUES).map((issue) => singleLine(issue)) } : {}),
    ...(retryAfterMs !== undefined ? { retry_after_ms: Math.max(0, Math.round(retryAfterMs)) } : {}),
  },
});

export const isErrorCode = (value: unknown): value is ErrorCode => ErrorCode.safeParse(value).success;

/**
 * A relayed request's failure as the relaying service answers it: the peer's answer (a bad
 * request, no worker) passed on with its code, anything else as {@link asHandlerError} makes it.
 */
export const asRelayedError = (error: unknown): HandlerError =>
  error instanceof RemoteCallError
    ? new HandlerError(error.code, error.message, error.issues, error.retryAfterMs)
    : asHandlerError(error);

/** Any failure as a HandlerError: one raised on purpose keeps its code, anything else is `internal`. */
export const asHandlerError = (error: unknown, context?: string): HandlerError =>
  error instanceof HandlerError
    ? error
    : new HandlerError("internal", context ? `${context}: ${messageOf(error)}` : messageOf(error));

/**
 * Sends an error reply: the services error headers (a one-line, bounded,
 * header-safe description: nats-core throws on CR or LF in a header, and the
 * description may quote the peer's bad input) and the JSON body. Never throws:
 * a reply that cannot be sent (the requester left, the connection closed) is
 * reported through the returned error, not raised into the handler.
 */
export function respondWithError(msg: ServiceMsg, failure: HandlerError): Error | null {
  try {
    const body = encodeJson(errorReply(failure.code, failure.message, failure.issues, failure.retryAfterMs));
    msg.respondError(STATUS_BY_CODE[failure.code], singleLine(failure.message), body);
    return null;
  } catch (error) {
    return error instanceof Error ? error : new Error(String(error));
  }
}

/** NATS could not be reached at first connect: the client's ConnectionError, with the URLs tried (passwords masked). */
export class NatsUnreachableError extends ConnectionError {
  /** The server URLs tried, their passwords masked. */
  readonly servers: string[];
  constructor(servers: readonly string[], cause: ConnectionError) {
    const masked = servers.map(maskUrl);
    super(`${cause.message} at ${masked.join(", ")}`, { cause });
    this.name = "NatsUnreachableError";
    this.servers = masked;
  }
}
