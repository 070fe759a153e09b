import type { JetStreamClient } from "@nats-io/jetstream";
import { encodeJson } from "../bus/codec.ts";
import { subjects } from "../bus/subjects.ts";

const decoder = new TextDecoder();
/** Largest original payload kept in a dead letter; the rest is cut (and said so). */
const MAX_KEPT = 16_384;

export interface DeadLetter {
  /** Where the message arrived. */
  subject: string;
  code: string;
  reason: string;
  /** The original payload as text, cut to MAX_KEPT characters. */
  data: string;
  truncated: boolean;
  received_at: number;
}

/**
 * Keeps a rejected message in the dead-letter stream, on
 * `conclave.dlq.<source>`. Never throws: losing the dead letter must not turn
 * bad input into a crash; the failure is returned for logging instead.
 */
export async function deadLetter(
  js: JetStreamClient,
  source: string,
  message: { subject: string; data: Uint8Array; code: string; reason: string },
): Promise<Error | null> {
  const text = decoder.decode(message.data.subarray(0, MAX_KEPT * 4));
  const letter: DeadLetter = {
    subject: message.subject,
    code: message.code,
    reason: message.reason,
    data: text.slice(0, MAX_KEPT),
    truncated: message.data.length > MAX_KEPT,
    received_at: Date.now(),
  };
  try {
    await js.publish(subjects.deadLetter(source), encodeJson(letter), { timeout: 2_000 });
    return null;
  } catch (error) {
    return error instanceof Error ? error : new Error(String(error));
  }
}
