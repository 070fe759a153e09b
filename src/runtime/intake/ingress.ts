import type { JetStreamClient } from "@nats-io/jetstream";
import { type NatsConnection, TimeoutError } from "@nats-io/nats-core";
import { encodeRecord } from "../../bus/codec.ts";
import { deadLetter } from "../../bus/deadLetters.ts";
import { asHandlerError, errorReply, HandlerError, respondWithError } from "../../bus/errors.ts";
import { isInboxReply } from "../../bus/replies.ts";
import type { ServiceMsg } from "../../bus/service.ts";
import { subjects } from "../../bus/subjects.ts";
import { type Addressed, addressOf } from "../../bus/tenancy.ts";
import { decodeMessage, publishJson, respondJson } from "../../bus/wire.ts";
import { type TurnAck, TurnSubmission } from "../../contracts/turn.ts";
import { turnKey, turnLabel } from "../../contracts/turnKey.ts";
import type { WalEntry } from "../../contracts/wal.ts";
import { BudgetExceededError, type BudgetGuard, budgetGuardFromEnv } from "../../cost/budget.ts";
import { isConclaveError, messageOf, singleLine } from "../../errors.ts";
import type { TurnStatusStore } from "../../eventlog/turnStatusStore.ts";
import { isTransient, throughElections } from "../../nats/elections.ts";
import { type Logger, turnFields } from "../../telemetry/log.ts";
import { carriedTraceHeaders } from "../../telemetry/natsHeaders.ts";
import { failpoint, failpointArmed } from "../failpoints.ts";
import type { AdmissionPreview, Admitted } from "../runner/admission.ts";
import type { SessionStore } from "../sessionStore.ts";
import { type Claim, type IdempotencyStore, RESERVATION_STALE_MS } from "./idempotency.ts";
import { type PipelineIntake, resolvePipeline } from "./pipelineSubmission.ts";
import type { RecipeIntake } from "./recipeSubmission.ts";

/** Largest accepted submission, in bytes (the text itself is limited to 16 000 characters). */
export const MAX_SUBMISSION_BYTES = 65_536;

export interface IngressDeps {
  nc: NatsConnection;
  js: JetStreamClient;
  /** The turn WAL's partition count: a session's entries go to its partition's subject. */
  partitions: number;
  /** The event log's stream count: the ack names the turn's events subject in its session's stream. */
  eventStreams: number;
  sessions: SessionStore;
  statuses: TurnStatusStore;
  idempotency: IdempotencyStore;
  log: Logger;
  /** How recipe submissions are checked. */
  recipes: RecipeIntake;
  /** Which pipeline a turn runs when neither it nor its session chose one, and the user's agents. Default: cognitive. */
  pipelines?: PipelineIntake;
  /** This runner's admission control: what a new turn would get (start, wait, or `busy`). Default: always start. */
  admission?: {
    /** `patienceMs`: the submission's `patience_ms`, how long its submitter waits for the turn to complete. */
    preview(sessionId: string, tenant?: string, patienceMs?: number): AdmissionPreview | Promise<AdmissionPreview>;
    /** A turn the preview admitted was stored in the WAL: counted until a runner is seen with it (`intakeBacklog.ts`). */
    stored?(sessionId: string, turnId: number): void;
    /** A turn the preview admitted was not stored after all: its place in the count is freed. */
    withdrawn?(): void;
  };
  /** Budgets (src/cost/budget.ts): null for none. Default: from the environment, made at the first submission. */
  budget?: BudgetGuard | null;
}

/** The intake of a runner given no pipeline settings: every session runs the built-in pipeline unless it chooses. */
const COGNITIVE: PipelineIntake = { default: { kind: "cognitive" } };

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

const ackOf = (
  deps: Pick<IngressDeps, "eventStreams">,
  address: Addressed,
  turnId: number,
  duplicate: boolean,
  admitted?: Admitted,
): TurnAck => ({
  session_id: address.view,
  turn_id: turnId,
  // A tenant reads its events through the runner; a client of the runtime's account may read the log itself.
  events_subject: address.tenant
    ? subjects.turnWatch(address.view)
    : subjects.turnEvents(address.sessionId, turnId, deps.eventStreams),
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
  /** The WAL write was tried: the entry may be stored, whatever was answered. */
  let walTried = false;
  try {
    address = addressOf(msg.subject);
    const { sessionId } = address;
    const submission = decodeMessage(msg, TurnSubmission, `turn for session ${sessionId}`, MAX_SUBMISSION_BYTES);
    const resolve = () =>
      resolvePipeline(
        { sessions: deps.sessions, pipelines: deps.pipelines ?? COGNITIVE, recipes: deps.recipes },
        sessionId,
        submission,
        address!.tenant,
      );
    // Read-only (the session's counter, maybe its pipeline): an election is ridden out, not answered with a timeout.
    let run = await throughElections(resolve);
    // The session's choice is stored with the session before a turn id is taken (a failure here refuses the turn
    // and leaves no gap); the reservation marks the counter, so whichever runner accepts a later turn reads it.
    const chosen = run.chosen;
    if (chosen) await throughElections(() => deps.sessions.choosePipeline(sessionId, chosen));
    if (submission.idempotency_key) {
      const key = submission.idempotency_key;
      claim = await throughElections(() => deps.idempotency.claim(sessionId, key));
      if (claim.kind === "accepted") {
        accepted = true;
        if (reply) respondJson(msg, ackOf(deps, address, claim.turnId, true));
        deps.log.info(
          `${turnLabel(sessionId, claim.turnId)} resubmitted with the same idempotency key: nothing queued`,
          turnFields(sessionId, claim.turnId),
        );
        return;
      }
    }
    let turnId: number;
    if (claim?.kind === "recover") {
      turnId = claim.turnId;
      const status = await throughElections(() => deps.statuses.get(sessionId, turnId));
      if (status && status.status !== "pending") {
        // A runner took it, so it was stored: the key's turn, accepted. Storing it again could run it twice.
        await deps.idempotency.accept(sessionId, claim.handle, turnId);
        accepted = true;
        if (reply) respondJson(msg, ackOf(deps, address, turnId, true));
        deps.log.info(
          `${turnLabel(sessionId, turnId)} recovered from a reservation whose acceptance died (it was stored)`,
          turnFields(sessionId, turnId),
        );
        return;
      }
    } else {
      if (submission.on_busy === "reject" && (await deps.sessions.busy(sessionId))) {
        throw new HandlerError("busy", `session ${sessionId} already has a turn pending or running (on_busy: reject)`);
      }
      await checkBudget(deps, address);
      admitted = await deps.admission?.preview(sessionId, address.tenant ?? undefined, submission.patience_ms);
      holdsPlace = admitted !== undefined && admitted.state !== "busy";
      if (admitted?.state === "busy") {
        // Refused before a turn id is taken or anything stored: a retry after the hint loses nothing.
        throw new HandlerError(
          "busy",
          `the runtime is at capacity (its queue of waiting turns is full${submission.patience_ms === undefined ? "" : `, or longer than the turn's patience of ${submission.patience_ms} ms`}); submit again in ${admitted.retryAfterMs} ms`,
          undefined,
          admitted.retryAfterMs,
        );
      }
      // Repeated after a lost answer, it may skip an id: a gap with no status holds nothing up.
      const reserved = await throughElections(() =>
        deps.sessions.reserveTurnId(sessionId, { choosingPipeline: chosen !== undefined }),
      );
      turnId = reserved.turnId;
      if (run.sessionChoseNone && reserved.sessionChosePipeline) {
        // This runner's copy of the session was stale: another runner's turn chose a pipeline since.
        try {
          run = await resolve();
        } catch (error) {
          await abandonTurnId(deps, sessionId, turnId, `its session's pipeline refused it: ${String(error)}`);
          throw error;
        }
      }
      if (claim) {
        try {
          await deps.idempotency.reserve(sessionId, claim.handle, turnId);
        } catch (error) {
          // In an election the reservation may have landed: the release below is a compare-and-set, so a
          // reservation that moved stays, and the retry stores this turn id. Nothing is stored yet either way.
          if (isTransient(error)) throw unavailable(`turn ${sessionId}/${turnId} could not be reserved`);
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
      text: submission.text ?? `run ${run.recipeName ?? "recipe"}`,
      on_busy: submission.on_busy,
      submitted_at: Date.now(),
      ...(submission.user_id ? { user_id: submission.user_id } : {}),
      ...(address.tenant ? { tenant: address.tenant } : {}),
      ...(submission.idempotency_key ? { idempotency_key: submission.idempotency_key } : {}),
      ...(run.recipe ? { recipe: run.recipe } : {}),
      ...(run.pipeline ? { pipeline: run.pipeline } : {}),
    };
    // From here the entry may be stored: the key's reservation is never released, so a retry finds this turn.
    walTried = true;
    const alreadyStored = await storeEntry(deps, msg, entry, {
      keyed: claim !== null,
      recovering: claim?.kind === "recover",
    });
    if (holdsPlace) {
      holdsPlace = false;
      deps.admission?.stored?.(sessionId, turnId); // stored now, or by this acceptance's own first attempt
    }
    failpoint("ingress.after_wal");
    if (claim) {
      const held = claim;
      await throughElections(() => deps.idempotency.accept(sessionId, held.handle, turnId));
    }
    accepted = true;
    // A recovered reservation whose turn was already in the WAL is a repeat of an accepted turn.
    const duplicate = claim?.kind === "recover" && alreadyStored;
    const expected = admitted && admitted.state !== "busy" && !duplicate ? admitted : undefined;
    if (reply) respondJson(msg, ackOf(deps, address, turnId, duplicate, expected));
    deps.log.info(
      claim?.kind === "recover"
        ? `${turnLabel(sessionId, turnId)} recovered from a reservation whose acceptance died${duplicate ? " (it was stored)" : ""}`
        : `${turnLabel(sessionId, turnId)} accepted`,
      turnFields(sessionId, turnId),
    );
  } catch (error) {
    if (holdsPlace) deps.admission?.withdrawn?.();
    if (claim && claim.kind !== "accepted" && !accepted && !walTried)
      await deps.idempotency.release(claim.handle).catch(() => {});
    // A stored value of the session failing its schema is reported on conclave.dlq.kv already; the submission
    // is not bad input, so it is answered but not kept as a dead letter.
    const unreadable = isConclaveError(error, "corrupt_value");
    // A spent budget is a policy answer, like `busy`: not kept as a dead letter.
    const keep = !unreadable && !(error instanceof BudgetExceededError);
    await refuse(deps, msg, address, reply, asHandlerError(error), keep);
  }
}

/** A retryable refusal: the runtime could not finish accepting the turn now (an election, NATS out of reach). */
const unavailable = (what: string, keyed = true) =>
  new HandlerError(
    "unavailable",
    keyed
      ? `${what}; submit it again with the same idempotency key: it resolves to this turn, never to a second one`
      : `${what}; it may or may not be stored: without an idempotency key a resubmission could run it twice`,
    undefined,
    RESERVATION_STALE_MS,
  );

/**
 * Writes the turn's WAL entry and its pending status, riding out an election (the message id keeps one copy
 * of an entry written twice, and `pending` only fills an empty slot). True when the entry was stored already.
 * Never says "not stored" for an entry that may be: a write still failing is `unavailable`, and the turn id
 * is kept (with a key, the retry stores the same turn; without one, the turn runs if it was stored).
 */
async function storeEntry(
  deps: IngressDeps,
  msg: ServiceMsg,
  entry: WalEntry,
  how: { keyed: boolean; recovering: boolean },
): Promise<boolean> {
  const { session_id: sessionId, turn_id: turnId } = entry;
  const keyed = how.keyed;
  try {
    const [, stored] = await throughElections(() =>
      Promise.all([
        deps.statuses.pending(sessionId, turnId, entry.submitted_at),
        // The submitter's trace context goes with the entry, for the turn's span on the runner that takes it.
        deps.js.publish(subjects.walOf(sessionId, deps.partitions), encodeRecord(entry), {
          msgID: `${turnKey(sessionId, turnId)}`,
          headers: carriedTraceHeaders(msg.headers),
        }),
      ]),
    );
    if (!how.recovering && failpointArmed("ingress.wal_answer_lost")) throw new TimeoutError(); // what a lost answer looks like: the write landed, the ack never came
    return stored.duplicate;
  } catch (error) {
    if (isTransient(error)) throw unavailable(`turn ${sessionId}/${turnId} is not confirmed stored`, keyed);
    // A definite refusal (permissions, a limit): nothing was stored, so the turn id will never have an entry.
    await abandonTurnId(deps, sessionId, turnId, `not stored in the WAL: ${String(error)}`);
    throw new HandlerError(
      "internal",
      `turn ${sessionId}/${turnId} could not be stored: ${singleLine(messageOf(error))}`,
    );
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
      publishJson(
        deps.nc,
        address?.tenant ? subjects.tenantErrors(address.tenant, view) : subjects.sessionErrors(view),
        errorReply(failure.code, failure.message, failure.issues, failure.retryAfterMs),
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
