/**
 * Supplemental injection (docs/context.md, "Supplemental injection"): a plan of how much of a text
 * the session's next turn would take (nothing written), and a commit that records it on the
 * session's log (SUPPLEMENT_COMMITTED, with the ledgers' events, through a runner), for the next
 * turn to put in its agents' context once. The runner plans both with its own arena (budget, zones,
 * tokenizer); bad input is refused here, with one line, before anything is sent.
 */
import type { NatsConnection } from "@nats-io/nats-core";
import type { z } from "zod";
import { requestJson } from "../bus/request.ts";
import { subjects } from "../bus/subjects.ts";
import { checkSessionId } from "../contracts/ids.ts";
import { LedgerReply, LedgerResults } from "../contracts/ledgerRequest.ts";
import {
  SupplementCommitInput,
  type SupplementCommitResult,
  type SupplementPlan,
  SupplementPlanInput,
} from "../contracts/supplement.ts";
import { InvalidRequestError } from "../errors.ts";

/** What `planSupplemental` is given besides the text. */
export interface SupplementPlanOptions {
  /** The injection's scope id (1-128 characters of A-Z, a-z, 0-9, `_ . : -`), echoed in the plan. */
  scope?: string;
  /** Tokens the rest of the next turn's context takes, when the caller knows it (seed 003's `usage`). */
  usageTokens?: number;
}

/** What `commitSupplemental` is given besides the text. */
export interface SupplementCommitOptions {
  /**
   * The most tokens the injection may take (seed 003's `finalTokens`, e.g. a plan's `tokens_accepted`):
   * the text is cut to it. More than the zone's room is refused (`invalid_request`). Absent: the room.
   */
  tokens?: number;
  /** The injection's scope id: a second commit with the same scope records nothing (`duplicate`). */
  scope?: string;
}

/** `input` checked against `schema`: a bad one is refused with one line naming the field. */
function checked<T>(schema: z.ZodType<T>, input: unknown, what: string): T {
  const parsed = schema.safeParse(input);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  throw new InvalidRequestError(`bad supplement ${what}: ${issue?.path.join(".") || "request"}: ${issue?.message}`);
}

/** The plan request, checked (usable before connecting: the CLI's usage errors). */
export function supplementPlanInput(text: string, options: SupplementPlanOptions = {}): SupplementPlanInput {
  return checked(
    SupplementPlanInput,
    {
      text,
      ...(options.scope !== undefined ? { scope: options.scope } : {}),
      ...(options.usageTokens !== undefined ? { usage_tokens: options.usageTokens } : {}),
    },
    "plan",
  );
}

/** The commit request, checked (usable before connecting: the CLI's usage errors). */
export function supplementCommitInput(text: string, options: SupplementCommitOptions = {}): SupplementCommitInput {
  return checked(
    SupplementCommitInput,
    {
      text,
      ...(options.tokens !== undefined ? { tokens: options.tokens } : {}),
      ...(options.scope !== undefined ? { scope: options.scope } : {}),
    },
    "commit",
  );
}

/** Plans a supplement through a runner (the ledgers' endpoint): nothing is written. */
async function planSupplemental(
  nc: NatsConnection,
  sessionId: string,
  text: string,
  options: SupplementPlanOptions,
  timeoutMs: number,
): Promise<SupplementPlan> {
  checkSessionId(sessionId);
  const supplement = supplementPlanInput(text, options);
  const request = { session_id: sessionId, op: "context.plan_supplement", supplement };
  const reply = await requestJson(nc, subjects.ledger(sessionId), request, LedgerReply, { timeoutMs });
  return LedgerResults["context.plan_supplement"].parse(reply.result);
}

/** Commits a supplement through a runner: recorded for the session's next turn; resolves with what was recorded. */
async function commitSupplemental(
  nc: NatsConnection,
  sessionId: string,
  text: string,
  options: SupplementCommitOptions,
  timeoutMs: number,
): Promise<SupplementCommitResult> {
  checkSessionId(sessionId);
  const supplement = supplementCommitInput(text, options);
  const request = { session_id: sessionId, op: "context.commit_supplement", supplement };
  const reply = await requestJson(nc, subjects.ledger(sessionId), request, LedgerReply, { timeoutMs });
  return LedgerResults["context.commit_supplement"].parse(reply.result);
}

/** A session's context arena, as a client reaches it (`client.context`; docs/context.md). */
export interface ContextClient {
  /**
   * How much of `text` the session's next turn would put in its agents' context (the `supplemental`
   * zone), as the runner plans it; writes nothing. The plan gives the tokens asked and accepted, the
   * zone's room, the outcome (`accepted`, `truncated` or `dropped`) and why, and the accepted text.
   * Bad input (an empty text, one over 16,000 characters, a bad scope or session id) rejects with
   * `invalid_request` before anything is sent.
   */
  planSupplemental(sessionId: string, text: string, options?: SupplementPlanOptions): Promise<SupplementPlan>;
  /**
   * Records `text` for the session's next turn (SUPPLEMENT_COMMITTED on its log): that turn puts it in
   * its agents' context once, and its CONTEXT_PLANNED cites it. The text is cut to `options.tokens`
   * or the zone's room; `tokens` above the room reject with `invalid_request`, as does a text the zone
   * has no room for. A scope committed before records nothing again (`duplicate: true`).
   */
  commitSupplemental(
    sessionId: string,
    text: string,
    options?: SupplementCommitOptions,
  ): Promise<SupplementCommitResult>;
}

/** The context arena's client methods over a connection. */
export function contextClient(nc: NatsConnection, timeoutMs: number): ContextClient {
  return {
    planSupplemental: (sessionId, text, options = {}) => planSupplemental(nc, sessionId, text, options, timeoutMs),
    commitSupplemental: (sessionId, text, options = {}) => commitSupplemental(nc, sessionId, text, options, timeoutMs),
  };
}
