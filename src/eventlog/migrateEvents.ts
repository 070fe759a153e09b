/**
 * Moves an event log made before it had several streams (one
 * `CONCLAVE_EVENTS` on `conclave.events.<session>.…`) over to S streams
 * (`conclave.events.<stream>.<session>.…`, src/eventlog/eventStreams.ts):
 * `conclave migrate events`. With the runners stopped:
 * 1. the old stream's subjects are moved aside (`conclave.legacy-events.>`), so
 *    the new streams' subjects do not overlap its own; what it stores stays;
 * 2. the new streams are made (or found made, by an earlier run of this);
 * 3. every stored message is copied, in order, to its session's stream, with
 *    its headers (its message id among them) and a `Conclave-Migrated-Seq`
 *    header naming where it came from;
 * 4. once every copy is stored, the old stream is deleted.
 * Run again after an interruption, it goes on after the last message copied.
 * Positions (stream sequences) and stored times are the new streams'.
 */
import { DeliverPolicy, type JetStreamClient, type JetStreamManager, type StreamInfo } from "@nats-io/jetstream";
import { headers as makeHeaders } from "@nats-io/nats-core";
import { isStreamNotFound } from "../bus/errors.ts";
import { LEGACY_EVENT_STREAM, SUBJECT_ROOT } from "../bus/subjects.ts";
import { partitionOf } from "../contracts/partitions.ts";
import { ConclaveError } from "../errors.ts";
import { orderedConsumer, releaseConsumer } from "./consumers.ts";
import { ensureEventStreams, eventStreamNames } from "./eventStreams.ts";
import { PULL_EXPIRES_MS } from "./streams.ts";

/** Where the old stream's subjects go while it is read over: none of the new streams' subjects. */
const ASIDE = `${SUBJECT_ROOT}.legacy-events.>`;
/** On each copy: the old stream's sequence of the message it copies (where a second run goes on from). */
export const MIGRATED_SEQ_HEADER = "Conclave-Migrated-Seq";
const OLD_PREFIX = `${SUBJECT_ROOT}.events.`;

export interface EventsMigration {
  /** Messages the old stream held. */
  found: number;
  /** Copied by this run (a second run copies only what the first did not). */
  copied: number;
  /** The new log's stream count. */
  streams: number;
}

export interface MigrateOptions {
  /** The stream count of a new log (default `DEFAULT_EVENT_STREAMS`); an existing one keeps its own. */
  streams?: number;
  /** Told the progress every `every` messages and at the end. */
  onProgress?: (copied: number, total: number) => void;
  /** Default 1 000. */
  every?: number;
}

/**
 * Moves the one-stream event log over (see the module's comment). Returns
 * null when there is no old stream: nothing to do.
 */
export async function migrateEvents(
  js: JetStreamClient,
  jsm: JetStreamManager,
  options: MigrateOptions = {},
): Promise<EventsMigration | null> {
  let legacy: StreamInfo;
  try {
    legacy = await jsm.streams.info(LEGACY_EVENT_STREAM);
  } catch (error) {
    if (isStreamNotFound(error)) return null;
    throw error;
  }
  if (!legacy.config.subjects?.includes(ASIDE))
    await jsm.streams.update(LEGACY_EVENT_STREAM, { ...legacy.config, subjects: [ASIDE] });
  const count = await ensureEventStreams(jsm, options.streams, { allowLegacy: true });
  const after = await lastMigrated(jsm, count);
  const total = legacy.state.messages;
  const last = legacy.state.last_seq;
  let copied = 0;
  if (last > after) copied = await copy(js, jsm, count, after, last, total, options);
  await jsm.streams.delete(LEGACY_EVENT_STREAM);
  options.onProgress?.(copied, total);
  return { found: total, copied, streams: count };
}

async function copy(
  js: JetStreamClient,
  jsm: JetStreamManager,
  count: number,
  after: number,
  last: number,
  total: number,
  options: MigrateOptions,
): Promise<number> {
  const every = options.every ?? 1_000;
  const consumer = await orderedConsumer(js, LEGACY_EVENT_STREAM, {
    deliver_policy: after === 0 ? DeliverPolicy.All : DeliverPolicy.StartSequence,
    ...(after === 0 ? {} : { opt_start_seq: after + 1 }),
  });
  let copied = 0;
  try {
    if ((await consumer.info(true)).num_pending === 0) return 0;
    const messages = await consumer.consume({ expires: PULL_EXPIRES_MS });
    for await (const msg of messages) {
      const subject = newSubject(msg.subject, count);
      const headers = makeHeaders();
      for (const [key, values] of msg.headers ?? []) for (const value of values) headers.append(key, value);
      headers.set(MIGRATED_SEQ_HEADER, String(msg.seq));
      // No msgID dedup here: the old id may be stored in the new stream already, by design (a re-run).
      headers.delete("Nats-Msg-Id");
      await js.publish(subject, msg.data, { headers, timeout: 10_000 });
      copied += 1;
      if (copied % every === 0) options.onProgress?.(copied, total);
      if (msg.seq >= last || msg.info.pending === 0) break;
    }
  } finally {
    await releaseConsumer(consumer);
  }
  const stored = await storedCopies(jsm, count);
  if (stored < total)
    throw new ConclaveError(
      "unavailable",
      `copied ${stored} of the old event log's ${total} messages; it is kept: run \`conclave migrate events\` again`,
    );
  return copied;
}

/** `conclave.events.<session>.<rest>` in the log of `count` streams. */
function newSubject(subject: string, count: number): string {
  const rest = subject.startsWith(OLD_PREFIX) ? subject.slice(OLD_PREFIX.length) : null;
  const session = rest?.split(".")[0];
  if (!rest || !session)
    throw new ConclaveError("invalid_request", `a message on ${subject} is not an event-log message: not moved`);
  return `${OLD_PREFIX}${partitionOf(session, count)}.${rest}`;
}

/** The highest old sequence copied so far: the last copy of each new stream says it. */
async function lastMigrated(jsm: JetStreamManager, count: number): Promise<number> {
  let highest = 0;
  for (const name of eventStreamNames(count)) {
    const info = await jsm.streams.info(name);
    if (info.state.messages === 0) continue;
    const message = await jsm.streams.getMessage(name, { seq: info.state.last_seq }).catch(() => null);
    highest = Math.max(highest, Number(message?.header.get(MIGRATED_SEQ_HEADER) ?? 0));
  }
  return highest;
}

/** Copies stored across the new streams (a copy carries the migration header; new events do not run meanwhile). */
async function storedCopies(jsm: JetStreamManager, count: number): Promise<number> {
  let stored = 0;
  for (const name of eventStreamNames(count)) stored += (await jsm.streams.info(name)).state.messages;
  return stored;
}
