import { z } from "zod";

/** Machine-readable error codes carried by every error reply and error event. */
export const ErrorCode = z.enum([
  "bad_json",
  "invalid_request",
  "payload_too_large",
  "unknown_subject",
  "timeout",
  "no_responders",
  "agent_failed",
  /** An agent answered with an output its own schema (or the council contract) rejects. */
  "invalid_agent_output",
  /** An agent delegated deeper than the policy's `max_delegation_depth` allows: a hard error. */
  "delegation_depth_exceeded",
  /** A tool's `run` (or `dryRun`, `rollback`) threw, or answered a result its output schema rejects. */
  "tool_failed",
  /** A turn submitted with `on_busy: "reject"` while the session has one pending or running. */
  "busy",
  /** Work stopped because a newer turn interrupted this one (double-texting). */
  "interrupted",
  /** Work stopped because a client cancelled the turn. */
  "cancelled",
  /** A turn, session or other named thing that does not exist. */
  "not_found",
  /** The requester may not do this (a recipe's human node asks for a role the answer does not carry). */
  "forbidden",
  /** The thing is not in a state that allows the request (a run that is not suspended, or already resumed). */
  "conflict",
  "internal",
  /**
   * The runtime could not finish the request now (a JetStream election, NATS out of reach): retryable,
   * after `retry_after_ms`. A turn submitted with an idempotency key resolves to the same turn when retried.
   */
  "unavailable",
  /**
   * A request, reply or stored record in a newer format than the reader's (docs/protocol.md, "Format
   * versions"): the reader is of an older release; upgrade it.
   */
  "format_too_new",
]);
export type ErrorCode = z.infer<typeof ErrorCode>;

/** The reply to any request that could not be served. */
export const ErrorReply = z.object({
  error: z.object({
    code: ErrorCode,
    message: z.string(),
    /** For `invalid_request`: one line per failed field, `path: message`. */
    issues: z.array(z.string()).optional(),
    /** For `busy` when the runners' queues are full: how long to wait before submitting again. */
    retry_after_ms: z.number().int().min(0).optional(),
  }),
});
export type ErrorReply = z.infer<typeof ErrorReply>;
