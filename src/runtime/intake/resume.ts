import { z } from "zod";
import { deadLetter } from "../../bus/deadLetters.ts";
import { asHandlerError, HandlerError, respondWithError } from "../../bus/errors.ts";
import { isInboxReply } from "../../bus/replies.ts";
import type { ServiceMsg } from "../../bus/service.ts";
import { subjects } from "../../bus/subjects.ts";
import { addressOf } from "../../bus/tenancy.ts";
import { decodeMessage, respondJson } from "../../bus/wire.ts";
import { type ResumeReply, ResumeRequest } from "../../contracts/recipeRun.ts";
import { turnLabel } from "../../contracts/turnKey.ts";
import type { TurnStatusRecord } from "../../contracts/wal.ts";
import { singleLine } from "../../errors.ts";
import { eventStreamCount } from "../../eventlog/eventStreams.ts";
import { resumeSuspended } from "../recipeHost/resume.ts";
import type { SuspensionTimers } from "../recipeHost/suspensionTimers.ts";
import type { CancelDeps } from "./cancel.ts";

/** Largest accepted resume request, in bytes (the answer included). */
export const MAX_RESUME_BYTES = 65_536;

/** How long a resume waits for a run that has just suspended to be recorded so (its log says so first). */
const SUSPENSION_SETTLE_MS = 3_000;

/**
 * The turn's status, waiting a moment while it is still `inflight`: a run's
 * TURN_SUSPENDED is in its log (where a client sees it) just before its
 * runner records the status `suspended`, and an answer sent at once must
 * not be refused for that.
 */
function settledStatus(deps: Pick<CancelDeps, "statuses">, sessionId: string, turnId: number) {
  return deps.statuses.settled(sessionId, turnId, SUSPENSION_SETTLE_MS);
}

/** Cancelled, or being cancelled (`cancelSuspended.ts` claims a suspension, then records its end). */
const wasCancelled = (status: TurnStatusRecord) =>
  status.status !== "suspended" && (status.cancel_reason !== undefined || status.outcome === "Cancelled");

/** An answer to a tool call's approval: `{ approved: boolean, reason? }`, tied to the call it answers. */
const ApprovalInput = z.object({ approved: z.boolean(), reason: z.string().max(1_000).optional() });

function approvalAnswer(input: unknown, callId: string) {
  const checked = ApprovalInput.safeParse(input);
  if (!checked.success)
    throw new HandlerError(
      "invalid_request",
      "this run waits for a tool call's approval: answer { approved: true|false, reason? }",
    );
  return { ...checked.data, call_id: callId };
}

/** Refusals that are the requester's bad input, kept in the dead-letter stream (source `resume`). */
const BAD_INPUT = new Set(["bad_json", "invalid_request", "payload_too_large"]);

/**
 * A person answers a suspended recipe run (`conclave.turn.resume.<session>`,
 * any runner serves it): the run must be waiting at a human node, and the
 * answer must carry the node's `required_role` when it has one. The run
 * then goes on, on whichever runner takes its new WAL entry.
 */
export async function serveResume(deps: CancelDeps & { timers: SuspensionTimers }, msg: ServiceMsg): Promise<void> {
  try {
    const { sessionId, view, tenant } = addressOf(msg.subject);
    if (tenant) throw new HandlerError("invalid_request", "tenants cannot resume runs yet");
    const request = decodeMessage(msg, ResumeRequest, `resume request for session ${view}`, MAX_RESUME_BYTES);
    const status = await settledStatus(deps, sessionId, request.turn_id);
    if (!status) throw new HandlerError("not_found", `session ${view} has no turn ${request.turn_id}`);
    if (wasCancelled(status)) {
      const why = status.cancel_reason ?? status.reason;
      throw new HandlerError(
        "conflict",
        `turn ${request.turn_id} was cancelled${why ? ` (${singleLine(why, 200)})` : ""}: it takes no answer`,
      );
    }
    if (status.status !== "suspended" || !status.suspended)
      throw new HandlerError("conflict", `turn ${request.turn_id} is ${status.status}, not waiting for an answer`);
    const required = status.suspended.required_role;
    if (required && request.role !== required)
      throw new HandlerError(
        "forbidden",
        `human node '${status.suspended.node}' needs an answer in the role '${required}'${request.role ? ` (not '${request.role}')` : ""}`,
      );
    const resumed = await resumeSuspended(
      deps,
      sessionId,
      request.turn_id,
      {
        node: status.suspended.node,
        answer: status.suspended.approval
          ? approvalAnswer(request.input, status.suspended.approval.call_id)
          : (request.input ?? null),
        user_id: request.user_id,
        ...(request.role ? { role: request.role } : {}),
        timed_out: false,
      },
      status.suspended.seq,
    );
    await deps.timers.forget(sessionId, request.turn_id);
    deps.log.info(
      `${turnLabel(sessionId, request.turn_id)}: '${resumed.node}' answered by ${request.user_id}; resumed`,
    );
    const reply: ResumeReply = {
      session_id: view,
      turn_id: request.turn_id,
      node: resumed.node,
      events_subject: subjects.turnEvents(sessionId, request.turn_id, await eventStreamCount(deps.jsm)),
      after_seq: resumed.seq,
    };
    if (isInboxReply(msg.reply, "runner")) respondJson(msg, reply);
  } catch (error) {
    const failure = asHandlerError(error);
    deps.log.warn(`resume on ${msg.subject}: ${singleLine(failure.message)}`);
    if (isInboxReply(msg.reply, "runner")) respondWithError(msg, failure);
    if (!BAD_INPUT.has(failure.code)) return;
    const lost = await deadLetter(deps.js, "resume", {
      subject: msg.subject,
      data: msg.data,
      code: failure.code,
      reason: failure.message,
    });
    if (lost) deps.log.error(`dead letter not stored: ${lost.message}`);
  }
}
