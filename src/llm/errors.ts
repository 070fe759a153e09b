import { scrubError, scrubSecrets } from "../config/secrets.ts";
import type { Usage } from "../contracts/model.ts";
import { ConclaveError, type LlmErrorCode, messageOf } from "../errors.ts";
import { MissingDependencyError } from "../optionalPackages.ts";
import { loadedOpenAI } from "./openaiPackage.ts";

/** What an {@link LlmError} may carry besides its code, caller and message. */
export interface LlmErrorOptions {
  /** HTTP status, when the server answered with an error. */
  status?: number;
  /** Tokens spent before the failure (set for invalid_output, where the server did answer). */
  usage?: Usage;
  cause?: unknown;
}

/**
 * Every failure of the LLM layer, tagged with what went wrong and who asked.
 * Its message and cause are scrubbed of secrets (config/secrets.ts) as it is
 * made: a server may echo the API key it was sent, and this message becomes
 * events, logs, span statuses and gateway replies.
 */
export class LlmError extends ConclaveError<LlmErrorCode> {
  readonly caller: string;
  readonly status: number | undefined;
  readonly usage: Usage | undefined;

  constructor(code: LlmErrorCode, caller: string, message: string, options: LlmErrorOptions = {}) {
    super(code, scrubSecrets(`${caller}: ${message}`), { cause: scrubError(options.cause) });
    this.caller = caller;
    this.status = options.status;
    this.usage = options.usage;
  }
}

/** Maps what the openai client threw (after its own retries) onto an LlmError. */
export function llmErrorFromOpenAI(error: unknown, caller: string): LlmError {
  if (error instanceof LlmError) return error;
  const message = messageOf(error);
  const fail = (code: LlmErrorCode, status?: number) => new LlmError(code, caller, message, { status, cause: error });
  if (error instanceof MissingDependencyError) return fail("bad_request");
  const OpenAI = loadedOpenAI()?.OpenAI;
  // Without the package loaded no client error can exist: anything else means the server misbehaved.
  if (!OpenAI) return fail("server_error");
  // Order matters: the timeout and abort classes are subclasses of APIError.
  if (error instanceof OpenAI.APIUserAbortError) return fail("aborted");
  if (error instanceof OpenAI.APIConnectionTimeoutError) return fail("timeout");
  if (error instanceof OpenAI.APIConnectionError) return fail("connection");
  if (error instanceof OpenAI.APIError) {
    const status = error.status;
    if (status === undefined) return fail("server_error"); // an error event inside an SSE stream
    if (status === 429) return fail("rate_limited", status);
    if (status === 408) return fail("timeout", status);
    if (status >= 500) return fail("server_error", status);
    return fail("bad_request", status);
  }
  // Anything else (e.g. an SSE chunk that is not JSON) means the server misbehaved.
  return fail("server_error");
}
