/**
 * Where a recipe run keeps its blackboard (the JSON object of shared
 * variables of one session) so that it survives a runner restart. One
 * contract, three backends: NATS KV (the default: the bus every runner has
 * anyway), Redis and PostgreSQL (when a recipe's `state.persistence` asks).
 */
import { SessionId } from "../contracts/ids.ts";
import { ConclaveError, messageOf, singleLine } from "../errors.ts";

/** The backends a blackboard can be kept in. */
export type BlackboardBackend = "nats" | "redis" | "postgres";

/** A session's blackboards, kept somewhere that outlives the runner. */
export interface BlackboardStore {
  readonly backend: BlackboardBackend;
  /** The session's blackboard, or null when it has none yet. */
  load(sessionId: string): Promise<Record<string, unknown> | null>;
  /** Replaces the session's blackboard (whole JSON object). */
  save(sessionId: string, blackboard: Record<string, unknown>): Promise<void>;
  /** Removes the session's blackboard (a session's erase); false when it had none. */
  erase?(sessionId: string): Promise<boolean>;
  /** Releases the store's connections (not a NATS connection it was given). */
  close(): Promise<void>;
}

/**
 * Largest blackboard a store accepts, in bytes of its JSON (UTF-8). Kept
 * under NATS's 1 MiB `max_payload` with room for the KV message's headers,
 * so the default backend can hold every blackboard the others can.
 */
export const MAX_BLACKBOARD_BYTES = 1_000_000;

/**
 * How long one store call may take (connecting included) before it fails,
 * unless a store is given its own `timeoutMs`. A dead server must surface as
 * an error within seconds, not as a turn that hangs.
 */
export const DEFAULT_BLACKBOARD_TIMEOUT_MS = 3_000;

/** Codes a blackboard store fails with. */
export type BlackboardErrorCode =
  /** The backend cannot be reached (or did not answer in time). */
  | "unavailable"
  /** The stored value is not a JSON object. */
  | "corrupt_value"
  /** The blackboard is over MAX_BLACKBOARD_BYTES. */
  | "payload_too_large"
  /** What was given cannot be stored: not a JSON object, a bad session id, a value the backend refuses. */
  | "invalid_request";

/** A blackboard store call that failed: one line naming the backend (and the session, when there is one). */
export class BlackboardStoreError extends ConclaveError<BlackboardErrorCode> {
  constructor(
    code: BlackboardErrorCode,
    readonly backend: BlackboardBackend,
    message: string,
    options?: ErrorOptions & { sessionId?: string },
  ) {
    super(code, singleLine(message, 400), options);
    this.sessionId = options?.sessionId;
  }
  /** The session the call was about, if any. */
  readonly sessionId: string | undefined;
}

/** The session id, checked: the same rule as everywhere (a NATS token, a safe key in any backend). */
export function checkSessionId(backend: BlackboardBackend, sessionId: string): string {
  if (!SessionId.safeParse(sessionId).success) {
    throw new BlackboardStoreError(
      "invalid_request",
      backend,
      `${backend} blackboard: session id ${JSON.stringify(String(sessionId).slice(0, 80))} is not a valid session id`,
    );
  }
  return sessionId;
}

/**
 * The blackboard as the JSON text every backend stores: refused unless it is
 * a JSON object of at most MAX_BLACKBOARD_BYTES.
 */
export function encodeBlackboard(backend: BlackboardBackend, sessionId: string, blackboard: unknown): string {
  let text: string | undefined;
  try {
    text = JSON.stringify(blackboard);
  } catch (error) {
    throw new BlackboardStoreError(
      "invalid_request",
      backend,
      `${backend} blackboard of session ${sessionId} is not serializable as JSON: ${messageOf(error)}`,
      { cause: error, sessionId },
    );
  }
  // JSON.stringify of an object always starts with "{": this also catches a toJSON that returns something else.
  if (typeof text !== "string" || !text.startsWith("{")) {
    throw new BlackboardStoreError(
      "invalid_request",
      backend,
      `${backend} blackboard of session ${sessionId} must be a JSON object, not ${describe(blackboard)}`,
      { sessionId },
    );
  }
  const bytes = Buffer.byteLength(text, "utf8");
  if (bytes > MAX_BLACKBOARD_BYTES) {
    throw new BlackboardStoreError(
      "payload_too_large",
      backend,
      `${backend} blackboard of session ${sessionId} is ${bytes} bytes of JSON, over the ${MAX_BLACKBOARD_BYTES}-byte limit: not saved`,
      { sessionId },
    );
  }
  return text;
}

/** A stored value checked to be a JSON object; corrupt_value (naming backend and session) otherwise. */
export function checkStoredBlackboard(
  backend: BlackboardBackend,
  sessionId: string,
  value: unknown,
): Record<string, unknown> {
  if (typeof value === "object" && value !== null && !Array.isArray(value)) return value as Record<string, unknown>;
  throw corrupt(backend, sessionId, `it is ${describe(value)}, not a JSON object`);
}

/** Stored JSON text parsed and checked to be a JSON object; corrupt_value otherwise. */
export function decodeBlackboard(backend: BlackboardBackend, sessionId: string, text: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw corrupt(backend, sessionId, `it is not JSON (${messageOf(error)})`, error);
  }
  return checkStoredBlackboard(backend, sessionId, value);
}

/** The corrupt_value error of a stored blackboard. */
export function corrupt(
  backend: BlackboardBackend,
  sessionId: string,
  problem: string,
  cause?: unknown,
): BlackboardStoreError {
  return new BlackboardStoreError(
    "corrupt_value",
    backend,
    `${backend} blackboard of session ${sessionId} is unreadable: ${problem}; it was left as it is for an operator to repair`,
    { cause, sessionId },
  );
}

/** What a value is, for an error message (never the value itself, which may be large or private). */
function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return `a ${typeof value}`;
}

/**
 * The failure of a call the store did not answer within `timeoutMs` (see
 * `withDeadline` in src/deadline.ts): "unavailable", as a store that is down.
 */
export function noAnswer(backend: BlackboardBackend, what: string, timeoutMs: number): BlackboardStoreError {
  return new BlackboardStoreError("unavailable", backend, `${what}: no answer within ${timeoutMs} ms`);
}
