import { createHash } from "node:crypto";
import type { JetStreamClient } from "@nats-io/jetstream";
import { lenientSetting } from "../config/load.ts";
import { singleLine } from "../errors.ts";
import { encodeRecord } from "./codec.ts";
import { subjects } from "./subjects.ts";

const decoder = new TextDecoder();
/** Longest excerpt of a peer's payload kept when excerpts are on (`CONCLAVE_DLQ_PAYLOADS=excerpt`). */
export const MAX_EXCERPT = 2_048;
/** Longest excerpt of a payload the runtime wrote itself (a WAL entry), kept so an operator can resubmit it. */
export const MAX_OWN_EXCERPT = 16_384;
/** Longest `reason` kept. */
const MAX_REASON = 512;
/**
 * Sources whose payload the runtime wrote itself (the turn WAL): their text is
 * kept, so a poison turn can be read back and resubmitted. Everything else is
 * a peer's input: redacted unless the operator asks for excerpts.
 */
const OWN_SOURCES = new Set(["poison", "turn", "wal"]);

/** What a dead letter keeps of a payload: `redacted` (hash and length only) or an `excerpt` (bounded). */
export type PayloadPolicy = "redacted" | "excerpt";

/**
 * The operator's choice for peer payloads: `CONCLAVE_DLQ_PAYLOADS=excerpt` keeps excerpts; anything else
 * redacts. Lenient (read while a bad message is being handled, it must not throw): `conclave config`
 * shows a bad value refused.
 */
export const peerPayloadPolicy = (env: NodeJS.ProcessEnv = process.env): PayloadPolicy =>
  lenientSetting(env, "CONCLAVE_DLQ_PAYLOADS");

export interface DeadLetter {
  /** Where the message arrived. */
  subject: string;
  code: string;
  /** Why it was refused: one line, bounded. */
  reason: string;
  /** The payload as text, cut to its bound; empty when redacted. */
  data: string;
  /** True when the payload was not kept (only its hash and length). */
  redacted: boolean;
  /** True when the payload was longer than an excerpt may be. */
  truncated: boolean;
  /** Length of the original payload, in bytes. */
  bytes: number;
  /** SHA-256 of the original payload (hex): to match a letter with a client's log without keeping its content. */
  sha256: string;
  /** Letters for this source and subject not stored since the previous one, by the rate limit. */
  suppressed?: number;
  received_at: number;
}

/**
 * A token bucket per source and subject: a peer flooding one subject (a
 * client's push consumer aimed at a worker, a script) fills its own bucket,
 * not the stream. What it drops is counted and reported on the next letter
 * stored for that subject. Buckets idle for a minute are forgotten.
 */
export class DeadLetterLimiter {
  readonly #buckets = new Map<string, { tokens: number; at: number; suppressed: number }>();
  constructor(
    private readonly burst = 32,
    private readonly perSecond = 4,
    private readonly now: () => number = Date.now,
  ) {}

  /** Null when the letter must be dropped; otherwise how many were dropped before it. */
  take(key: string): { suppressed: number } | null {
    const now = this.now();
    if (this.#buckets.size > 10_000) this.#forgetIdle(now);
    const bucket = this.#buckets.get(key) ?? { tokens: this.burst, at: now, suppressed: 0 };
    bucket.tokens = Math.min(this.burst, bucket.tokens + ((now - bucket.at) / 1000) * this.perSecond);
    bucket.at = now;
    this.#buckets.set(key, bucket);
    if (bucket.tokens < 1) {
      bucket.suppressed += 1;
      return null;
    }
    bucket.tokens -= 1;
    const suppressed = bucket.suppressed;
    bucket.suppressed = 0;
    return { suppressed };
  }

  #forgetIdle(now: number): void {
    for (const [key, bucket] of this.#buckets) if (now - bucket.at > 60_000) this.#buckets.delete(key);
  }
}

const sharedLimiter = new DeadLetterLimiter();

export interface DeadLetterOptions {
  /** What to keep of a peer's payload. Default: `peerPayloadPolicy()` (redacted unless the operator says). */
  payload?: PayloadPolicy;
  /** Default: one limiter per process. */
  limiter?: DeadLetterLimiter;
}

/** The record stored for a rejected message (exported for tests). */
export function letterOf(
  source: string,
  message: { subject: string; data: Uint8Array; code: string; reason: string },
  policy: PayloadPolicy,
  suppressed = 0,
): DeadLetter {
  const own = OWN_SOURCES.has(source);
  const limit = own ? MAX_OWN_EXCERPT : MAX_EXCERPT;
  const redacted = !own && policy === "redacted";
  return {
    subject: singleLine(message.subject, 512),
    code: message.code,
    reason: singleLine(message.reason, MAX_REASON),
    // Decoded from a bounded prefix: a multi-byte character cut at the end becomes U+FFFD, which is fine here.
    data: redacted ? "" : decoder.decode(message.data.subarray(0, limit * 4)).slice(0, limit),
    redacted,
    truncated: message.data.length > limit,
    bytes: message.data.length,
    sha256: createHash("sha256").update(message.data).digest("hex"),
    ...(suppressed > 0 ? { suppressed } : {}),
    received_at: Date.now(),
  };
}

/**
 * Keeps a rejected message in the dead-letter stream, on
 * `conclave.dlq.<source>`: its subject, the error, and its payload's hash and
 * length (the payload itself only as a bounded excerpt, and for peers only
 * when the operator sets `CONCLAVE_DLQ_PAYLOADS=excerpt`). Rate-limited per
 * source and subject. Never throws: losing the dead letter must not turn bad
 * input into a crash; the failure is returned for logging instead (a letter
 * dropped by the rate limit is not a failure: it is counted on the next one).
 */
export async function deadLetter(
  js: JetStreamClient,
  source: string,
  message: { subject: string; data: Uint8Array; code: string; reason: string },
  options: DeadLetterOptions = {},
): Promise<Error | null> {
  try {
    const admitted = (options.limiter ?? sharedLimiter).take(`${source} ${message.subject}`);
    if (!admitted) return null;
    const letter = letterOf(source, message, options.payload ?? peerPayloadPolicy(), admitted.suppressed);
    await js.publish(subjects.deadLetter(source), encodeRecord(letter), { timeout: 2_000 });
    return null;
  } catch (error) {
    return error instanceof Error ? error : new Error(String(error));
  }
}

/**
 * Whether a stored dead letter is about `sessionId`: the subject it arrived
 * on names the session as a token (`conclave.turn.submit.<session>`, a WAL
 * subject), or its kept payload names it as a session id. An erase deletes
 * these (src/runtime/intake/eraseStores.ts); an unreadable letter is kept.
 */
export function isLetterOfSession(data: Uint8Array, sessionId: string): boolean {
  let letter: Partial<DeadLetter>;
  try {
    letter = JSON.parse(decoder.decode(data)) as Partial<DeadLetter>;
  } catch {
    return false;
  }
  if (typeof letter.subject === "string" && letter.subject.split(".").includes(sessionId)) return true;
  // A payload excerpt may be cut anywhere: the id is looked for as a JSON member, not parsed.
  const quoted = JSON.stringify(sessionId);
  return (
    typeof letter.data === "string" && new RegExp(`"session_id"\\s*:\\s*${escapeRegExp(quoted)}`).test(letter.data)
  );
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
