/**
 * Explicit compaction requests (docs/context.md, "Compaction requests"): a
 * request recorded on the session's log (COMPACTION_REQUESTED, with the
 * ledgers' events, through a runner), and whether one is pending, read from
 * the log: the latest request, unless a CONTEXT_COMPACTED consumed it
 * (`request_seq`), or, in a fork, its source had (the arena its SESSION_FORKED
 * carries). Nothing is kept beside the log.
 */
import type { NatsConnection } from "@nats-io/nats-core";
import { requestJson } from "../bus/request.ts";
import { subjects } from "../bus/subjects.ts";
import type { EngineEvent } from "../contracts/events.ts";
import { checkSessionId } from "../contracts/ids.ts";
import { CompactionRequest, type Ledgers, type RecordedCompactionRequest } from "../contracts/ledger.ts";
import { LedgerReply, LedgerResults } from "../contracts/ledgerRequest.ts";
import { InvalidRequestError } from "../errors.ts";

/** What `requestCompaction` is given. */
export interface CompactionRequestOptions {
  /** Why (recorded, and named by `pendingCompaction`): 1-500 characters. */
  reason: string;
  /** What the summary should keep; absent: the runner's CONCLAVE_COMPACTION_INSTRUCTIONS, if it sets one. */
  instructions?: string;
}

/** A pending compaction request: its reason, and the instructions recorded with it (null: none). */
export interface PendingCompaction {
  reason: string;
  instructions: string | null;
}

/** The request as its event records it, checked here: a bad one is refused before anything is sent. */
export function compactionRequest(options: CompactionRequestOptions): CompactionRequest {
  const parsed = CompactionRequest.safeParse(options);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  throw new InvalidRequestError(`bad compaction request: ${issue?.path.join(".") || "request"}: ${issue?.message}`);
}

/** Records a compaction request through a runner (the ledgers' endpoint); resolves with what was recorded. */
export async function requestCompaction(
  nc: NatsConnection,
  sessionId: string,
  options: CompactionRequestOptions,
  timeoutMs: number,
): Promise<CompactionRequest> {
  checkSessionId(sessionId);
  const request = { session_id: sessionId, op: "context.request_compaction", compaction: compactionRequest(options) };
  const reply = await requestJson(nc, subjects.ledger(sessionId), request, LedgerReply, { timeoutMs });
  return LedgerResults["context.request_compaction"].parse(reply.result);
}

/** The request pending over a session's events: the latest one, unless a compaction consumed it. */
export function pendingOf(
  latest: RecordedCompactionRequest | null | undefined,
  events: Iterable<EngineEvent>,
): PendingCompaction | null {
  if (!latest) return null;
  let consumed = 0;
  for (const event of events) {
    if (event.kind === "CONTEXT_COMPACTED") consumed = Math.max(consumed, event.payload.request_seq ?? 0);
    if (event.kind === "SESSION_FORKED") consumed = Math.max(consumed, forkConsumed(event.payload.state));
  }
  return latest.seq > consumed ? { reason: latest.reason, instructions: latest.instructions ?? null } : null;
}

/** What a fork's arena had consumed (its copy of the request, in the fork's log), as its SESSION_FORKED carries it. */
function forkConsumed(state: Record<string, unknown>): number {
  const session = state.session as { context_arena?: { compaction_request_seq?: unknown } } | undefined;
  const seq = session?.context_arena?.compaction_request_seq;
  return typeof seq === "number" ? seq : 0;
}

/** The session's pending compaction request, or null: the ledgers' latest request against the session's log. */
export async function pendingCompaction(
  nc: NatsConnection,
  sessionId: string,
  events: (sessionId: string) => Promise<EngineEvent[]>,
  timeoutMs: number,
): Promise<PendingCompaction | null> {
  checkSessionId(sessionId);
  const reply = await requestJson(
    nc,
    subjects.ledger(sessionId),
    { session_id: sessionId, op: "ledgers.state" },
    LedgerReply,
    { timeoutMs },
  );
  const ledgers = LedgerResults["ledgers.state"].parse(reply.result) as Ledgers;
  if (!ledgers.compaction) return null;
  return pendingOf(ledgers.compaction, await events(sessionId));
}
