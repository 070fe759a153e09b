import type { NatsConnection } from "@nats-io/nats-core";
import type { z } from "zod";
import { encodeJson } from "./codec.ts";
import { decodeMessage, FORMAT_HEADERS } from "./wire.ts";

/**
 * Asks everyone listening on `subject` and gathers the answers that fit `schema`: waits at most
 * `waitMs` for the first, then until `quietMs` pass without another (nats.js's "stall" strategy).
 * What does not fit (a no-responders status) is left out. Never throws: no responders, or a
 * closing connection, gathers nothing. `what` names an answer in decoding.
 */
export async function gatherReplies<S extends z.ZodType>(
  nc: NatsConnection,
  subject: string,
  body: unknown,
  schema: S,
  what: string,
  options: { waitMs: number; quietMs: number },
): Promise<z.infer<S>[]> {
  const answers: z.infer<S>[] = [];
  try {
    const replies = await nc.requestMany(subject, encodeJson(body), {
      strategy: "stall",
      maxWait: options.waitMs,
      stall: options.quietMs,
      headers: FORMAT_HEADERS,
    });
    for await (const reply of replies) {
      try {
        answers.push(decodeMessage(reply, schema, what));
      } catch {
        // Not an answer (a no-responders status): nobody answered with it.
      }
    }
  } catch {
    // No responders, or the connection closed.
  }
  return answers;
}
