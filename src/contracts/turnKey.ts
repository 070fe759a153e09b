/**
 * The one spelling of a turn's identity as text. {@link turnKey} is a wire
 * format (KV keys, JetStream message ids, idempotency keys, subject tokens):
 * its bytes must never change. {@link turnLabel} is for people (logs, errors).
 */

/** `<session>.<turn>`: the key of a turn in KV buckets, message ids and in-memory maps. */
export const turnKey = (sessionId: string, turnId: number): string => `${sessionId}.${turnId}`;

/** `turn <session>.<turn>`: how a log line or an error names a turn. */
export const turnLabel = (sessionId: string, turnId: number): string => `turn ${turnKey(sessionId, turnId)}`;
