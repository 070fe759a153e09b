import type { JetStreamClient } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import type { ServiceMsg } from "@nats-io/services";
import { decodeJson, encodeJson } from "../bus/codec.ts";
import { asHandlerError, errorReply, HandlerError, respondWithError } from "../bus/errors.ts";
import { subjects } from "../bus/subjects.ts";
import { SessionId } from "../contracts/ids.ts";
import { type TurnAck, TurnSubmission } from "../contracts/turn.ts";
import type { WalEntry } from "../contracts/wal.ts";
import { singleLine } from "../errors.ts";
import { deadLetter } from "../eventlog/deadLetters.ts";
import type { Logger } from "./log.ts";
import type { SessionStore } from "./sessionStore.ts";
import type { TurnStatusStore } from "./turnStatusStore.ts";

/** Largest accepted submission, in bytes (the text itself is limited to 16 000 characters). */
export const MAX_SUBMISSION_BYTES = 65_536;

export interface IngressDeps {
  nc: NatsConnection;
  js: JetStreamClient;
  sessions: SessionStore;
  statuses: TurnStatusStore;
  log: Logger;
}

/**
 * Replies go only to inbox subjects (`_INBOX…`): a submission that names any
 * other reply subject (a KV key, another service's subject) is answered like
 * a plain publish, so the runner's rights are never lent to a client.
 */
const answerable = (msg: ServiceMsg): boolean => !!msg.reply && msg.reply.startsWith("_INBOX");

const ackOf = (sessionId: string, turnId: number, duplicate: boolean): TurnAck => ({
  session_id: sessionId,
  turn_id: turnId,
  events_subject: subjects.turnEvents(sessionId, turnId),
  duplicate,
});

/**
 * Accepts a submission on `conclave.turn.submit.<session_id>`: validates it,
 * honours its idempotency key and double-texting policy, reserves the turn
 * id, and writes the turn to the WAL. The ack is sent only once the WAL entry
 * is stored, so an acknowledged turn survives any process dying. Rejected
 * input gets an error reply (or, published without a reply subject, an error
 * on `conclave.errors.<session_id>`) and is kept in the dead-letter stream.
 */
export async function acceptSubmission(deps: IngressDeps, msg: ServiceMsg): Promise<void> {
  const reply = answerable(msg);
  const sessionId = msg.subject.slice(subjects.turnSubmit("").length);
  let claimedKey: string | undefined;
  try {
    const session = SessionId.safeParse(sessionId);
    if (!session.success) {
      throw new HandlerError(
        "invalid_request",
        `bad session id in subject ${msg.subject}: ${session.error.issues[0]?.message}`,
      );
    }
    const submission = decodeJson(msg.data, TurnSubmission, `turn for session ${sessionId}`, MAX_SUBMISSION_BYTES);
    if (submission.idempotency_key) {
      const earlier = await deps.sessions.claimIdempotency(sessionId, submission.idempotency_key);
      if (earlier !== null) {
        if (reply) msg.respond(encodeJson(ackOf(sessionId, earlier, true)));
        deps.log.info(`turn ${sessionId}/${earlier} resubmitted with the same idempotency key: nothing queued`);
        return;
      }
      claimedKey = submission.idempotency_key;
    }
    if (submission.on_busy === "reject" && (await deps.sessions.busy(sessionId))) {
      throw new HandlerError("busy", `session ${sessionId} already has a turn pending or running (on_busy: reject)`);
    }
    const turnId = await deps.sessions.nextTurnId(sessionId);
    const entry: WalEntry = {
      session_id: sessionId,
      turn_id: turnId,
      text: submission.text,
      on_busy: submission.on_busy,
      submitted_at: Date.now(),
      ...(submission.user_id ? { user_id: submission.user_id } : {}),
      ...(submission.idempotency_key ? { idempotency_key: submission.idempotency_key } : {}),
    };
    try {
      // Both at once: `pending` only fills an empty slot, so a runner that took the entry first keeps its `inflight`.
      await Promise.all([
        deps.statuses.pending(sessionId, turnId, entry.submitted_at),
        deps.js.publish(subjects.wal(sessionId), encodeJson(entry), { msgID: `${sessionId}.${turnId}` }),
      ]);
    } catch (error) {
      await deps.statuses.finish(sessionId, turnId, "failed", { reason: `not stored in the WAL: ${String(error)}` });
      await deps.sessions.markDone(sessionId, turnId);
      throw new HandlerError("internal", `turn ${sessionId}/${turnId} could not be stored; submit it again`);
    }
    if (claimedKey) await deps.sessions.bindIdempotency(sessionId, claimedKey, turnId);
    claimedKey = undefined;
    if (reply) msg.respond(encodeJson(ackOf(sessionId, turnId, false)));
    deps.log.info(`turn ${sessionId}/${turnId} accepted`);
  } catch (error) {
    if (claimedKey) await deps.sessions.releaseIdempotency(sessionId, claimedKey).catch(() => {});
    const failure = asHandlerError(error);
    const body = errorReply(failure.code, failure.message, failure.issues);
    deps.log.warn(`rejected a turn on ${msg.subject}: ${singleLine(failure.message)}`);
    if (reply) respondWithError(msg, failure);
    else
      deps.nc.publish(
        subjects.sessionErrors(SessionId.safeParse(sessionId).success ? sessionId : "_"),
        encodeJson(body),
      );
    if (failure.code !== "busy") {
      const lost = await deadLetter(deps.js, "submit", {
        subject: msg.subject,
        data: msg.data,
        code: failure.code,
        reason: failure.message,
      });
      if (lost) deps.log.error(`dead letter not stored: ${lost.message}`);
    }
  }
}
