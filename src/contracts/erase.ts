import { z } from "zod";
import { SessionId } from "./ids.ts";

/** Longest an erase waits for the session's open turns to end after cancelling them, in ms. */
export const MAX_ERASE_WAIT_MS = 120_000;

/** How long a runner waits for cancelled turns to end when the request does not say, in ms. */
export const DEFAULT_ERASE_WAIT_MS = 30_000;

/** Free text kept in the audit record: one line of printable characters (no control or format characters). */
const AuditText = z
  .string()
  .trim()
  .min(1)
  .max(200)
  .regex(/^[^\p{Cc}\p{Cf}\p{Zl}\p{Zp}]*$/u, "printable characters only, on one line");

/** A request to erase one session (`conclave.session.erase.<session>`, served by the runners). */
export const EraseRequest = z.object({
  /** Who asks, for the audit record (an operator's or user's id, never content). At most 200 characters. */
  requested_by: AuditText.optional(),
  /** Why, for the audit record. At most 200 characters. */
  reason: AuditText.optional(),
  /** Erase the session's forks too (and theirs); without it they are only named in the record. */
  with_forks: z.boolean().optional(),
  /** How long to wait for turns in flight to end once cancelled. Default 30 000 ms, at most 120 000. */
  wait_ms: z.number().int().min(0).max(MAX_ERASE_WAIT_MS).optional(),
});
export type EraseRequest = z.infer<typeof EraseRequest>;

/** What one store held of the session and no longer does: entries (messages, keys or rows) removed. */
export const ErasedCounts = z.record(z.string(), z.number().int().min(0));
export type ErasedCounts = z.infer<typeof ErasedCounts>;

/**
 * The audit record of an erase (stream CONCLAVE_AUDIT, subject
 * `conclave.audit.erase.<session>`), and the reply to the request. It holds
 * no content of the session: ids, times and counts only.
 */
export const EraseRecord = z.object({
  session_id: SessionId,
  /** The tenant whose account the request came through, if any. */
  tenant: z.string().optional(),
  requested_by: z.string().optional(),
  reason: z.string().optional(),
  /** The runner that erased it. */
  runner: z.string(),
  started_at: z.number().int(),
  finished_at: z.number().int(),
  /** Turns that were pending or running, cancelled before the erase. */
  cancelled_turns: z.array(z.number().int().min(1)),
  /** Per store (`events`, `wal`, `turn_statuses`, …), how many entries were removed. */
  erased: ErasedCounts,
  /** Stores this runner could not reach or has not configured (`postgres_memory_graph`, …): nothing was erased there. */
  skipped: z.array(z.string()),
  /** Stores whose erase failed (the reply is then an `internal` error): asking again erases them. */
  failed: z.array(z.string()).optional(),
  /** What was kept by design, each with why (docs/operations.md, "Erasing a session"). */
  kept: z.record(z.string(), z.string()).optional(),
  /** Processes that dropped their in-memory copy of the session and said so (memory workers, gateways). */
  acknowledged_by: z.array(z.string()).optional(),
  /** Sessions forked from this one (ids only). */
  forks: z.array(SessionId).optional(),
  /** True when those forks were erased too (`with_forks`), each with its own record. */
  forks_erased: z.boolean().optional(),
});
export type EraseRecord = z.infer<typeof EraseRecord>;
