/**
 * Reads a session's turn events exactly as stored, for verification: every
 * message in log order with its stream position, including those that are
 * not valid events (the checks report them), and without the reordering a
 * follower applies. Needs only what the `client` role may do on the log.
 */
import { DeliverPolicy, jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import { isStreamNotFound } from "../bus/errors.ts";
import { eventStreamOfSubject, subjects } from "../bus/subjects.ts";
import { EngineEvent } from "../contracts/events.ts";
import { FormatTooNewError, parseRecord } from "../contracts/format.ts";
import { orderedConsumer, releaseConsumer } from "../eventlog/consumers.ts";
import { eventStreamCount } from "../eventlog/eventStreams.ts";
import { PULL_EXPIRES_MS } from "../eventlog/streams.ts";

/** One stored message of a session's turns: its event, or why it is not one. */
export type LoggedMessage =
  | { position: number; subject: string; event: EngineEvent }
  | { position: number; subject: string; invalid: string };

const decoder = new TextDecoder();

function parseMessage(position: number, subject: string, data: Uint8Array): LoggedMessage {
  let json: unknown;
  try {
    json = JSON.parse(decoder.decode(data));
  } catch {
    return { position, subject, invalid: "not JSON" };
  }
  const parsed = parseRecord(EngineEvent, json, `event ${subject}`);
  if (!parsed.success) {
    const invalid =
      parsed.error instanceof FormatTooNewError
        ? parsed.error.message
        : (parsed.error.issues[0]?.message ?? "not an event");
    return { position, subject, invalid };
  }
  return { position, subject, event: parsed.data as EngineEvent };
}

/** Every message stored on the session's turn subjects, in log order. */
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
      found.push(parseMessage(msg.seq, msg.subject, msg.data));
      if (msg.info.pending === 0 || msg.seq >= last) break;
    }
  } finally {
    void messages.stop();
    await releaseConsumer(consumer);
  }
  return found;
}
