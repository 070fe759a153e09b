/**
 * Reads a session's turn events exactly as stored, for verification: every
 * message in log order with its stream position, including those that are
 * not valid events (the checks report them), and without the reordering a
 * follower applies. Needs only what the `client` role may do on the log.
 */
import { DeliverPolicy, jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import { z } from "zod";
import { isStreamNotFound } from "../bus/errors.ts";
import { eventStreamOfSubject, subjects } from "../bus/subjects.ts";
import { decodeStoredEvents, type StoredEvents } from "../contracts/eventBatch.ts";
import type { EngineEvent } from "../contracts/events.ts";
import { FormatTooNewError } from "../contracts/format.ts";
import { messageOf } from "../errors.ts";
import { orderedConsumer, releaseConsumer } from "../eventlog/consumers.ts";
import { eventStreamCount } from "../eventlog/eventStreams.ts";
import { PULL_EXPIRES_MS } from "../eventlog/streams.ts";

/** One stored event of a session's turns (a batch gives one each, at its position), or why a message holds no valid one. */
export type LoggedMessage =
  | { position: number; subject: string; event: EngineEvent }
  | { position: number; subject: string; invalid: string };

/** A stored message as its events (a batch's, each with the message's position), and what in it is not valid. */
function parseMessage(position: number, subject: string, data: Uint8Array): LoggedMessage[] {
  let stored: StoredEvents;
  try {
    stored = decodeStoredEvents(data, `event ${subject}`);
  } catch (error) {
    if (error instanceof FormatTooNewError) return [{ position, subject, invalid: error.message }];
    throw error;
  }
  const found: LoggedMessage[] = stored.events.map((event) => ({ position, subject, event }));
  if (stored.invalid !== undefined) found.push({ position, subject, invalid: reasonOf(stored.invalid) });
  return found;
}

/** Why a stored message is not a valid event, in a few words. */
function reasonOf(error: unknown): string {
  if (error instanceof SyntaxError) return "not JSON";
  if (error instanceof z.ZodError) return error.issues[0]?.message ?? "not an event";
  return messageOf(error);
}

/** Every event stored on the session's turn subjects, in log order, and every message that is not valid. */
export async function readLoggedMessages(nc: NatsConnection, sessionId: string): Promise<LoggedMessage[]> {
  const jsm = await jetstreamManager(nc);
  const filter = subjects.sessionEvents(sessionId, await eventStreamCount(jsm));
  const stream = eventStreamOfSubject(filter);
  let last: number;
  try {
    last = (await jsm.streams.info(stream)).state.last_seq;
  } catch (error) {
    if (isStreamNotFound(error)) return [];
    throw error;
  }
  const consumer = await orderedConsumer(jetstream(nc), stream, {
    filter_subjects: filter,
    deliver_policy: DeliverPolicy.All,
  });
  const found: LoggedMessage[] = [];
  if ((await consumer.info(true)).num_pending === 0) {
    await releaseConsumer(consumer);
    return found;
  }
  const messages = await consumer.consume({ expires: PULL_EXPIRES_MS });
  try {
    for await (const msg of messages) {
      found.push(...parseMessage(msg.seq, msg.subject, msg.data));
      if (msg.info.pending === 0 || msg.seq >= last) break;
    }
  } finally {
    void messages.stop();
    await releaseConsumer(consumer);
  }
  return found;
}
