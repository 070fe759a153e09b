import { ErrorCode, type ErrorReply } from "../contracts/errors.ts";

/** A request that a remote actor refused or could not answer; `code` says why. */
export class RemoteCallError extends Error {
  readonly code: ErrorCode;
  readonly subject: string;
  readonly issues: string[] | undefined;
  constructor(subject: string, code: ErrorCode, message: string, issues?: string[]) {
    super(message);
    this.name = "RemoteCallError";
    this.code = code;
    this.subject = subject;
    this.issues = issues;
  }
}

/** An error a handler raises on purpose, to be sent back as an error reply with this code. */
export class HandlerError extends Error {
  readonly code: ErrorCode;
  readonly issues: string[] | undefined;
  constructor(code: ErrorCode, message: string, issues?: string[]) {
    super(message);
    this.name = "HandlerError";
    this.code = code;
    this.issues = issues;
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
  busy: 409,
  interrupted: 409,
  internal: 500,
};

export const errorReply = (code: ErrorCode, message: string, issues?: string[]): ErrorReply => ({
  error: { code, message, ...(issues && issues.length > 0 ? { issues } : {}) },
});

export const isErrorCode = (value: unknown): value is ErrorCode => ErrorCode.safeParse(value).success;
