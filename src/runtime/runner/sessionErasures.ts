/**
 * The erase broadcast (`conclave.session.erased`, core NATS): the runner that
 * served an erase publishes `{ session_id }` as a request once the stores are
 * erased; every process holding a copy of a session in memory follows it and
 * drops the session. Runners drop theirs without answering (they may not
 * publish on a runner's inbox), and so does the gateway (`conclave serve`, the
 * client role: its A2A tasks); memory workers, and any other process with a
 * copy that may answer the runner (`_INBOX_runner.`), answer `{ by }` once
 * their copy is gone, and the erase waits for those answers, bounded.
 */
import type { NatsConnection } from "@nats-io/nats-core";
import { z } from "zod";
import { gatherReplies } from "../../bus/gatherReplies.ts";
import { isInboxReply } from "../../bus/replies.ts";
import { subjects } from "../../bus/subjects.ts";
import { decodeMessage, respondJson } from "../../bus/wire.ts";
import { SessionId } from "../../contracts/ids.ts";
import { messageOf } from "../../errors.ts";

/** What the broadcast carries. */
export const SessionErased = z.object({ session_id: SessionId });
/** A follower's answer: its copy of the session is gone. */
export const ErasureAck = z.object({ by: z.string().min(1).max(200) });

/** How a follower answers the broadcast. Without it, it only drops its copy. */
export interface ErasureAckOptions {
  /** Who answers (kept in the erase's audit record): a process name, e.g. `worker-3 memory`. */
  as: string;
  /** Called when dropping the copy failed (the follower then does not answer). */
  onError?: (sessionId: string, message: string) => void;
}

/**
 * Calls `onErased` for every session erased anywhere, so a process that holds
 * the session in memory forgets it; with `ack`, answers the erasing runner
 * once `onErased` has resolved. `onRefused` is told when the server refuses
 * the subscription (a role without the grant: no erasure reaches it). Returns
 * the unsubscribe.
 */
export function followErasures(
  nc: NatsConnection,
  onErased: (sessionId: string) => void | Promise<void>,
  ack?: ErasureAckOptions,
  onRefused?: (message: string) => void,
): () => void {
  const subscription = nc.subscribe(subjects.sessionErased, {
    callback: (error, msg) => {
      if (error) {
        onRefused?.(messageOf(error));
        return;
      }
      let sessionId: string;
      try {
        sessionId = decodeMessage(msg, SessionErased, "session erasure").session_id;
      } catch {
        return; // Not an erasure: nothing to forget.
      }
      void (async () => {
        try {
          await onErased(sessionId);
        } catch (failure) {
          ack?.onError?.(sessionId, messageOf(failure));
          return;
        }
        // Only a worker's answer to a runner: a reply subject naming anything else is never written.
        if (ack && isInboxReply(msg.reply, "worker")) respondJson(msg, { by: ack.as });
      })();
    },
  });
  return () => subscription.unsubscribe();
}

/** Longest an erase waits for the first follower's answer, in ms. */
export const ERASURE_ACK_WAIT_MS = 5_000;
/** After an answer, how long without another one ends the wait, in ms. */
export const ERASURE_ACK_QUIET_MS = 1_000;

/**
 * Tells every process that the session was erased, and collects the answers
 * of those that acknowledge (memory workers): who answered, sorted. Waits at
 * most `waitMs` for the first answer, then until `quietMs` pass without one.
 * Never throws: a closing connection answers nobody.
 */
export async function announceErasure(
  nc: NatsConnection,
  sessionId: string,
  options: { waitMs?: number; quietMs?: number } = {},
): Promise<string[]> {
  // No responders, or the connection closed: those that heard dropped their copies without answering.
  const acks = await gatherReplies(
    nc,
    subjects.sessionErased,
    { session_id: sessionId },
    ErasureAck,
    "erasure acknowledgement",
    { waitMs: options.waitMs ?? ERASURE_ACK_WAIT_MS, quietMs: options.quietMs ?? ERASURE_ACK_QUIET_MS },
  );
  return [...new Set(acks.map((ack) => ack.by))].sort();
}
