/**
 * The reply subjects each serving role answers on: the inboxes of the roles
 * whose requests it serves, as nats.conf lets it publish there ("Replies").
 * The runner serves clients (`_INBOX_client.`, and `_INBOX.`, every NATS
 * library's default), workers (`_INBOX_worker.`: tool calls, an agent's
 * ledger writes), the operator (`_INBOX_operator.`: services discovery) and
 * tenants (`_R_.`: the response subjects nats-server makes for a request
 * that crossed accounts). Workers serve the runner (`_INBOX_runner.`) and
 * the operator. No process answers on its own role's inbox: nobody but a
 * peer of its role listens there, for its own replies, JetStream acks and
 * consumer deliveries — an answer there would be a forgery of one.
 */
export const REPLY_PREFIXES = {
  runner: ["_INBOX.", "_INBOX_client.", "_INBOX_worker.", "_INBOX_operator.", "_R_."],
  worker: ["_INBOX_runner.", "_INBOX_operator."],
} as const satisfies Record<string, readonly string[]>;

/** A role that serves requests, by the reply subjects it answers on (see {@link REPLY_PREFIXES}). */
export type ServingRole = keyof typeof REPLY_PREFIXES;

/** One or more subject tokens: no empty token, no wildcard, no whitespace. */
const TOKENS = /^[^\s.*>]+(\.[^\s.*>]+)*$/;

/**
 * A reply subject a Conclave process of role `servedBy` may answer on: a
 * requester's inbox — one of the prefixes of {@link REPLY_PREFIXES} followed
 * by one or more tokens, e.g. `_INBOX_client.Jx3….7` — or a tenant account's
 * response subject (`_R_.…`, the runner). A process answers with its own
 * publish rights; a reply subject naming anything else (a KV key, the event
 * log, a JetStream ack, `_INBOXevil`, its own role's inbox) would lend those
 * rights to whoever sent the message, so it is never answered.
 */
export function isInboxReply(reply: string | undefined, servedBy: ServingRole): reply is string {
  return isReplyUnder(reply, REPLY_PREFIXES[servedBy]);
}

/** A reply subject under one of `prefixes` (each ending in `.`), followed by one or more tokens. */
export function isReplyUnder(reply: string | undefined, prefixes: readonly string[]): reply is string {
  if (!reply) return false;
  const prefix = prefixes.find((candidate) => reply.startsWith(candidate));
  return prefix !== undefined && TOKENS.test(reply.slice(prefix.length));
}
