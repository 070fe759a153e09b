import { Empty } from "@nats-io/nats-core";
import { encodeJson } from "../../bus/codec.ts";
import { RemoteCallError } from "../../bus/errors.ts";
import type { ServiceMsg } from "../../bus/service.ts";
import { subjects } from "../../bus/subjects.ts";
import { ErrorReply } from "../../contracts/errors.ts";
import { TurnAck } from "../../contracts/turn.ts";
import type { LocalSubmit } from "../../schedules/firingLoop.ts";
import { acceptSubmission, type IngressDeps } from "./ingress.ts";

const decoder = new TextDecoder();
/** A reply subject the intake accepts as a requester's inbox; nothing is published there: the answer is caught here. */
const LOCAL_REPLY = "_INBOX.schedule.local";

/**
 * The intake path a client's `submit` takes (validation, idempotency key,
 * double-texting, the WAL write before the ack), called in-process: a runner
 * may not request its own role's inbox answers over NATS (nats.conf,
 * "Replies"), so the fired turn's ack is taken from the handler directly.
 * The schedule firing loop (src/schedules/firingLoop.ts) submits through it.
 */
export function localSubmit(deps: IngressDeps): LocalSubmit {
  return (sessionId, submission) =>
    new Promise<TurnAck>((resolve, reject) => {
      const answer = (data: Uint8Array | string | undefined, failed: boolean) => {
        const text = typeof data === "string" ? data : decoder.decode(data ?? Empty);
        let body: unknown;
        try {
          body = JSON.parse(text);
        } catch {
          body = undefined;
        }
        const subject = subjects.turnSubmit(sessionId);
        if (failed) {
          const error = ErrorReply.safeParse(body);
          reject(
            error.success
              ? RemoteCallError.fromReply(subject, error.data)
              : new RemoteCallError(subject, "internal", `the intake refused the turn: ${text}`),
          );
        } else {
          const ack = TurnAck.safeParse(body);
          if (ack.success) resolve(ack.data);
          else reject(new RemoteCallError(subject, "internal", `the intake answered no ack: ${text}`));
        }
        return true;
      };
      const msg: ServiceMsg = {
        subject: subjects.turnSubmit(sessionId),
        reply: LOCAL_REPLY,
        data: encodeJson(submission),
        headers: undefined,
        respond: (data) => answer(data, false),
        respondError: (_code, _description, data) => answer(data, true),
      };
      acceptSubmission(deps, msg).catch(reject);
    });
}
