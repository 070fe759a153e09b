import type { NatsConnection } from "@nats-io/nats-core";
import type { EngineEvent } from "../contracts/events.ts";
import type { TurnStatusRecord } from "../contracts/wal.ts";
import { InvalidRequestError } from "../errors.ts";
import type { RecipeRunResult } from "../eventlog/followRun.ts";
import type { TurnStatusStore } from "../eventlog/turnStatusStore.ts";
import { resumeRun } from "./recipeRun.ts";

/** A tool call waiting for a person's approval: its run is suspended until `approve` or `deny`. */
export interface PendingApproval {
  /** `<session>/<turn>`: what `approve`, `deny` and `conclave approve` take. */
  id: string;
  sessionId: string;
  turnId: number;
  /** The agent node that made the call. */
  node: string;
  tool: string;
  /** The call's arguments, as the request interceptors left them. */
  args: unknown;
  /** Why it needs approval (the policy's rule). */
  reason: string;
  /** The role an answer must be given in. */
  requiredRole?: string;
  prompt: string;
  /** Since when it waits (epoch ms). */
  since: number;
}

/** How to answer an approval. */
export interface ApprovalOptions {
  /** Who answers (recorded on the run's log). */
  userId: string;
  /** The role answering; must be the approval's `requiredRole`. Default `operator`. */
  role?: string;
  /** Why (recorded with the answer). */
  reason?: string;
  /** Each event of the run after the answer, as it is stored. */
  onEvent?: (event: EngineEvent) => void;
  /** Patience until the run completes or suspends again, in ms. Default 120 000. */
  timeoutMs?: number;
  /** Patience for the runner's answer to the request, in ms. Default 5 000. */
  requestTimeoutMs?: number;
}

/** A pending approval as the client shows it. */
export function pendingApproval(record: TurnStatusRecord): PendingApproval | null {
  const suspended = record.suspended;
  if (record.status !== "suspended" || !suspended?.approval) return null;
  return {
    id: `${record.session_id}/${record.turn_id}`,
    sessionId: record.session_id,
    turnId: record.turn_id,
    node: suspended.node,
    tool: suspended.approval.tool,
    args: suspended.approval.args,
    reason: suspended.approval.reason,
    ...(suspended.required_role ? { requiredRole: suspended.required_role } : {}),
    prompt: suspended.prompt,
    since: record.updated_at,
  };
}

/** The pending approvals, oldest first (of one session, or all). */
export async function listApprovals(statuses: TurnStatusStore | null, sessionId?: string): Promise<PendingApproval[]> {
  if (!statuses) return [];
  return (await statuses.pendingApprovals(sessionId)).flatMap((record) => pendingApproval(record) ?? []);
}

/** `<session>/<turn>` → its parts, or a clear error. */
export function parseApprovalId(id: string): { sessionId: string; turnId: number } {
  const match = /^([A-Za-z0-9_-]{1,64})\/([1-9][0-9]*)$/.exec(id);
  if (!match) throw new InvalidRequestError(`bad approval id '${id}': it is <session>/<turn>, e.g. ops/3`);
  return { sessionId: match[1]!, turnId: Number(match[2]) };
}

/** Approves (or denies) the tool call a run waits for, then follows the run until it completes or suspends again. */
export function answerApproval(
  nc: NatsConnection,
  id: string,
  approved: boolean,
  options: ApprovalOptions,
): Promise<RecipeRunResult> {
  const { sessionId, turnId } = parseApprovalId(id);
  return resumeRun(nc, sessionId, turnId, {
    input: { approved, ...(options.reason ? { reason: options.reason } : {}) },
    userId: options.userId,
    role: options.role ?? "operator",
    ...(options.onEvent ? { onEvent: options.onEvent } : {}),
    ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
    ...(options.requestTimeoutMs !== undefined ? { requestTimeoutMs: options.requestTimeoutMs } : {}),
  });
}
