import type { Msg, MsgCallback, NatsConnection, SubscriptionOptions } from "@nats-io/nats-core";
import { Svcm } from "@nats-io/services";

/**
 * A reply subject a Conclave process may answer on: a requester's inbox
 * (`_INBOX…`), or a tenant account's response subject (`_R_.…`, made by
 * nats-server for a request that crossed accounts). A process answers with
 * its own publish rights; a reply subject naming anything else (a KV key,
 * the event log, a JetStream ack) would lend those rights to whoever sent
 * the message, so it is never answered.
 */
export const isInboxReply = (reply: string | undefined): reply is string =>
  !!reply && (reply.startsWith("_INBOX") || reply.startsWith("_R_."));

/**
 * The connection type of @nats-io/services. Its last release on npm (3.0.0-25) depends on its
 * own @nats-io/nats-core (3.0.0-50), whose declarations still have the enums later releases
 * turned into string constants; the protocol and the methods it calls are the same.
 */
export type ServicesConnection = ConstructorParameters<typeof Svcm>[0];

/** Subjects of the services API's own handlers (discovery: PING, INFO, STATS). */
const DISCOVERY_PREFIX = "$SRV.";

/**
 * A services manager whose discovery handlers (`$SRV.PING|INFO|STATS`,
 * answered by @nats-io/services itself) see only requests with an inbox
 * reply: whoever may send a `$SRV.PING` — the operator, or anyone with a
 * wider role — cannot have the runner or a worker write its answer into a
 * data subject. (nats-server's `allow_responses` would not stop it: a reply
 * to a request received is exactly what it allows.) Endpoints are guarded
 * by their own handlers.
 */
export function guardedServices(nc: NatsConnection): Svcm {
  const guarded = new Proxy(nc, {
    get(target, property, receiver) {
      if (property !== "subscribe") return Reflect.get(target, property, receiver);
      return (subject: string, options?: SubscriptionOptions) => {
        const callback = options?.callback;
        if (!subject.startsWith(DISCOVERY_PREFIX) || !callback) return target.subscribe(subject, options);
        const onlyRequests: MsgCallback<Msg> = (error, msg) => {
          if (error || isInboxReply(msg.reply)) callback(error, msg);
        };
        return target.subscribe(subject, { ...options, callback: onlyRequests });
      };
    },
  });
  return new Svcm(guarded as unknown as ServicesConnection);
}
