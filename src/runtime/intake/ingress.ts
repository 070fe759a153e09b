import type { JetStreamClient } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import { decodeJson, encodeJson } from "../../bus/codec.ts";
import { asHandlerError, errorReply, HandlerError, respondWithError } from "../../bus/errors.ts";
import { isInboxReply } from "../../bus/replies.ts";
import type { ServiceMsg } from "../../bus/service.ts";
import { subjects } from "../../bus/subjects.ts";
import { type TurnAck, TurnSubmission } from "../../contracts/turn.ts";
import type { WalEntry } from "../../contracts/wal.ts";
import { BudgetExceededError, type BudgetGuard, budgetGuardFromEnv } from "../../cost/budget.ts";
import { isConclaveError, singleLine } from "../../errors.ts";
import { deadLetter } from "../../eventlog/deadLetters.ts";
import { carriedTraceHeaders } from "../../telemetry/natsHeaders.ts";
import { failpoint } from "../failpoints.ts";
import { type Logger, turnFields } from "../log.ts";
import type { AdmissionPreview, Admitted } from "../runner/admission.ts";
import type { SessionStore } from "../sessionStore.ts";
import type { TurnStatusStore } from "../turnStatusStore.ts";
import type { Claim, IdempotencyStore } from "./idempotency.ts";
import { checkRecipeSubmission, type RecipeIntake } from "./recipeSubmission.ts";
import { type Addressed, addressOf } from "./tenancy.ts";

/** Largest accepted submission, in bytes (the text itself is limited to 16 000 characters). */
export const MAX_SUBMISSION_BYTES = 65_536;

export interface IngressDeps {
  nc: NatsConnection;
  js: JetStreamClient;
  sessions: SessionStore;
  statuses: TurnStatusStore;
  idempotency: IdempotencyStore;
  log: Logger;
  /** How recipe submissions are checked. */
  recipes: RecipeIntake;
  /** This runner's admission control: what a new turn would get (start, wait, or `busy`). Default: always start. */
  admission?: {
    preview(sessionId: string, tenant?: string): AdmissionPreview | Promise<AdmissionPreview>;
    /** A turn the preview admitted was stored in the WAL: the backlog counts it until its next read does. */
    stored?(): void;
    /** A turn the preview admitted was not stored after all: its place in the count is freed. */
    withdrawn?(): void;
  };
  /** Budgets (src/cost/budget.ts): null for none. Default: from the environment, made at the first submission. */
  budget?: BudgetGuard | null;
}

const budgetsFromEnv = new WeakMap<IngressDeps, BudgetGuard | null>();

/** Refuses the turn when the session has spent its budget; nothing is read when no budget is set. */
async function checkBudget(deps: IngressDeps, address: Addressed): Promise<void> {
  let guard = deps.budget;
  if (guard === undefined) {
    guard = budgetsFromEnv.get(deps);
    if (guard === undefined) {
      guard = budgetGuardFromEnv();
      budgetsFromEnv.set(deps, guard);
    }
  }
  await guard?.check(
    {
      nc: deps.nc,
      js: deps.js,
      lastTurnId: (sessionId) => deps.sessions.lastTurnId(sessionId),
      stage: async (sessionId, turnId) => {
        const status = (await deps.statuses.get(sessionId, turnId))?.status;
        if (status === "pending" || status === "suspended") return "waiting";
        return status === "inflight" ? "running" : "over";
      },
    },
    address.sessionId,
    address.tenant ?? undefined,
  );
}

const ackOf = (address: Addressed, turnId: number, duplicate: boolean, admitted?: Admitted): TurnAck => ({
  session_id: address.view,
  turn_id: turnId,
  // A tenant reads its events through the runner; a client of the runtime's account may read the log itself.
  events_subject: address.tenant ? subjects.turnWatch(address.view) : subjects.turnEvents(address.sessionId, turnId),
  duplicate,
  ...(admitted ? { admission: admitted } : {}),
});

/**
 * Accepts a submission on `conclave.turn.submit.<session_id>`: validates it,
 * honours its idempotency key and double-texting policy, reserves the turn
 * id, and writes the turn to the WAL. The ack is sent only once the WAL entry
 * is stored, so an acknowledged turn survives any process dying.
 *
 * With an idempotency key, the key is reserved first and its turn id recorded
 * in the reservation before the WAL write; a retry after this runner died
 * anywhere in between finds the reservation, stores the turn under the same
 * id (the WAL's message id keeps one copy) and gets the ack. Rejected input
 * gets an error reply (or, published without a reply subject, an error on
 * `conclave.errors.<session_id>`) and is kept in the dead-letter stream.
 */
export async function acceptSubmission(deps: IngressDeps, msg: ServiceMsg): Promise<void> {
  const reply = isInboxReply(msg.reply, "runner");
  let address: Addressed | null = null;
  let claim: Claim | null = null;
  let accepted = false;
  let admitted: AdmissionPreview | undefined;
  /** The admission counts this submission (admitted, not stored yet): told how it ends, once. */
  let holdsPlace = false;
  try {
    address = addressOf(msg.subject);
    const { sessionId } = address;
    const submission = decodeJson(msg.data, TurnSubmission, `turn for session ${sessionId}`, MAX_SUBMISSION_BYTES);
    const recipeName = submission.recipe ? await checkRecipeSubmission(deps.recipes, submission.recipe) : undefined;
    if (submission.idempotency_key) {
      claim = await deps.idempotency.claim(sessionId, submission.idempotency_key);
      if (claim.kind === "accepted") {
        accepted = true;
        if (reply) msg.respond(encodeJson(ackOf(address, claim.turnId, true)));
        deps.log.info(
          `turn ${sessionId}/${claim.turnId} resubmitted with the same idempotency key: nothing queued`,
          turnFields(sessionId, claim.turnId),
        );
        return;
      }
    }
    let turnId: number;
    if (claim?.kind === "recover") {
      turnId = claim.turnId;
      const status = await deps.statuses.get(sessionId, turnId);
      if (status && status.status !== "pending") {
        // A runner took it, so it was stored: the key's turn, accepted. Storing it again could run it twice.
        await deps.idempotency.accept(sessionId, claim.handle, turnId);
        accepted = true;
        if (reply) msg.respond(encodeJson(ackOf(address, turnId, true)));
        deps.log.info(
          `turn ${sessionId}/${turnId} recovered from a reservation whose acceptance died (it was stored)`,
          turnFields(sessionId, turnId),
        );
        return;
      }
    } else {
      if (submission.on_busy === "reject" && (await deps.sessions.busy(sessionId))) {
        throw new HandlerError("busy", `session ${sessionId} already has a turn pending or running (on_busy: reject)`);
      }
      await checkBudget(deps, address);
      admitted = await deps.admission?.preview(sessionId, address.tenant ?? undefined);
      holdsPlace = admitted !== undefined && admitted.state !== "busy";
      if (admitted?.state === "busy") {
        // Refused before a turn id is taken or anything stored: a retry after the hint loses nothing.
        throw new HandlerError(
          "busy",
          `the runtime is at capacity (its queue of waiting turns is full); submit again in ${admitted.retryAfterMs} ms`,
          undefined,
          admitted.retryAfterMs,
        );
      }
      turnId = await deps.sessions.nextTurnId(sessionId);
      if (claim) {
        try {
          await deps.idempotency.reserve(sessionId, claim.handle, turnId);
        } catch (error) {
          await abandonTurnId(deps, sessionId, turnId, String(error));
          claim = null; // not ours any more: nothing to release
          throw error;
        }
        failpoint("ingress.after_reserve");
      }
    }
    const entry: WalEntry = {
      session_id: sessionId,
      turn_id: turnId,
      text: submission.text ?? `run ${recipeName ?? "recipe"}`,
      on_busy: submission.on_busy,
      submitted_at: Date.now(),
      ...(submission.user_id ? { user_id: submission.user_id } : {}),
      ...(address.tenant ? { tenant: address.tenant } : {}),
      ...(submission.idempotency_key ? { idempotency_key: submission.idempotency_key } : {}),
      ...(submission.recipe ? { recipe: submission.recipe } : {}),
    };
    let alreadyStored = false;
    try {
      // Both at once: `pending` only fills an empty slot, so a runner that took the entry first keeps its `inflight`.
      const [, stored] = await Promise.all([
        deps.statuses.pending(sessionId, turnId, entry.submitted_at),
        // The submitter's trace context goes with the entry, for the turn's span on the runner that takes it.
        deps.js.publish(subjects.wal(sessionId), encodeJson(entry), {
          msgID: `${sessionId}.${turnId}`,
          headers: carriedTraceHeaders(msg.headers),
        }),
      ]);
      alreadyStored = stored.duplicate;
      if (holdsPlace) {
        holdsPlace = false;
        if (alreadyStored) deps.admission?.withdrawn?.();
        else deps.admission?.stored?.();
      }
    } catch (error) {
      await abandonTurnId(deps, sessionId, turnId, `not stored in the WAL: ${String(error)}`);
      throw new HandlerError("internal", `turn ${sessionId}/${turnId} could not be stored; submit it again`);
    }
    failpoint("ingress.after_wal");
    if (claim) await deps.idempotency.accept(sessionId, claim.handle, turnId);
    accepted = true;
    // A recovered reservation whose turn was already in the WAL is a repeat of an accepted turn.
    const duplicate = claim?.kind === "recover" && alreadyStored;
    const expected = admitted && admitted.state !== "busy" && !duplicate ? admitted : undefined;
    if (reply) msg.respond(encodeJson(ackOf(address, turnId, duplicate, expected)));
    deps.log.info(
      claim?.kind === "recover"
        ? `turn ${sessionId}/${turnId} recovered from a reservation whose acceptance died${duplicate ? " (it was stored)" : ""}`
        : `turn ${sessionId}/${turnId} accepted`,
      turnFields(sessionId, turnId),
    );
  } catch (error) {
    if (holdsPlace) deps.admission?.withdrawn?.();
    if (claim && claim.kind !== "accepted" && !accepted) await deps.idempotency.release(claim.handle).catch(() => {});
    // A stored value of the session failing its schema is reported on conclave.dlq.kv already; the submission
    // is not bad input, so it is answered but not kept as a dead letter.
    const unreadable = isConclaveError(error, "corrupt_value");
    // A spent budget is a policy answer, like `busy`: not kept as a dead letter.
    const keep = !unreadable && !(error instanceof BudgetExceededError);
    await refuse(deps, msg, address, reply, asHandlerError(error), keep);
  }
}

/** A turn id that will never have a WAL entry: failed and done, so the session is not left busy. */
async function abandonTurnId(deps: IngressDeps, sessionId: string, turnId: number, reason: string): Promise<void> {
  await deps.statuses.finish(sessionId, turnId, "failed", { reason }).catch(() => {});
  await deps.sessions.markDone(sessionId, turnId).catch(() => {});
}

/** Answers a refused submission (error reply, or `conclave.errors.<session>`) and keeps bad input as a dead letter. */
async function refuse(
  deps: IngressDeps,
  msg: ServiceMsg,
  address: Addressed | null,
  reply: boolean,
  failure: HandlerError,
  keepDeadLetter = true,
): Promise<void> {
  deps.log.warn(`rejected a turn on ${msg.subject}: ${singleLine(failure.message)}`);
  if (reply) respondWithError(msg, failure);
  else {
    try {
      // A tenant's account may import its errors (`conclave.tenant.<tenant>.errors.*` as `conclave.errors.*`).
      const view = address?.view ?? "_";
      deps.nc.publish(
        address?.tenant ? subjects.tenantErrors(address.tenant, view) : subjects.sessionErrors(view),
        encodeJson(errorReply(failure.code, failure.message, failure.issues, failure.retryAfterMs)),
      );
    } catch {
      // The connection is closing: the submitter was not waiting for an answer anyway.
    }
  }
  if (failure.code === "busy" || !keepDeadLetter) return; // a policy answer, or not the submitter's fault
  const lost = await deadLetter(deps.js, "submit", {
    subject: msg.subject,
    data: msg.data,
    code: failure.code,
    reason: failure.message,
  });
  if (lost) deps.log.error(`dead letter not stored: ${lost.message}`);
}
