/**
 * The event log's streams: a session's events live in one of S streams
 * (`CONCLAVE_EVENTS_<index>`), the one of its partition among S
 * (`partitionOf`, the hash the turn WAL uses too), under
 * `conclave.events.<index>.<session>.…`. More streams spread the log's
 * writes over more stream leaders, so over more NATS nodes
 * (docs/operations.md, "Scaling out"). S is fixed when the log is made
 * (`CONCLAVE_EVENT_STREAMS`, default {@link DEFAULT_EVENT_STREAMS}) and
 * recorded in every stream's description, where a reader finds it with one
 * request (docs/protocol.md, "Where a turn is stored").
 */
import type { JetStreamManager, StreamInfo } from "@nats-io/jetstream";
import { jetstreamManager, StorageType } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import { isStreamNotFound } from "../bus/errors.ts";
import { eventStream, LEGACY_EVENT_STREAM, subjects } from "../bus/subjects.ts";
import { DEFAULT_EVENT_STREAMS, MAX_EVENT_STREAMS } from "../contracts/partitions.ts";
import { ConclaveError } from "../errors.ts";
import { patientlySetUp } from "../nats/replicas.ts";
import { ensureStream } from "./streams.ts";

export { DEFAULT_EVENT_STREAMS, MAX_EVENT_STREAMS } from "../contracts/partitions.ts";

const describe = (index: number, count: number) => `conclave event log stream ${index} of ${count}`;
const COUNT_IN_DESCRIPTION = /^conclave event log stream \d+ of (\d+)$/;

/** A stream count that cannot be one (`CONCLAVE_EVENT_STREAMS`, `RunnerOptions.eventStreams`). */
export function checkEventStreams(count: number): number {
  if (!Number.isInteger(count) || count < 1 || count > MAX_EVENT_STREAMS)
    throw new ConclaveError(
      "config",
      `event streams must be a whole number from 1 to ${MAX_EVENT_STREAMS}, not ${count}`,
    );
  return count;
}

/** What one stream of the log holds: every event, file-backed, `msgID` dedup over two minutes. */
const streamConfig = (index: number, count: number) => ({
  name: eventStream(index),
  description: describe(index, count),
  subjects: [subjects.streamEvents(index)],
  storage: StorageType.File,
  duplicate_window: 120_000_000_000,
});

const countOf = (info: StreamInfo | null): number | null => {
  const match = info?.config.description?.match(COUNT_IN_DESCRIPTION);
  return match ? Number(match[1]) : null;
};

/** Stream counts found per connection: fixed once the log is made, so read once. */
const known = new WeakMap<NatsConnection, number>();

/**
 * Makes the event log's streams, or finds them made, and returns their
 * count: fixed when the log was made, so `requested` only counts for a new
 * one (another count asked of an existing log is a `config` error naming
 * both). A log made before it had several streams (one `CONCLAVE_EVENTS`) is
 * refused with a `config` error naming `conclave migrate events` (which alone
 * passes `allowLegacy`).
 */
export async function ensureEventStreams(
  jsm: JetStreamManager,
  requested?: number,
  options: { allowLegacy?: boolean } = {},
): Promise<number> {
  if (requested !== undefined) checkEventStreams(requested);
  if (!options.allowLegacy) await refuseLegacy(jsm);
  const made = countOf(await firstStream(jsm));
  if (made !== null) {
    if (requested !== undefined && requested !== made)
      throw new ConclaveError(
        "config",
        `the event log has ${made} streams, fixed when it was made: ${requested} cannot be asked of it (docs/operations.md, "Scaling out")`,
      );
    await Promise.all(Array.from({ length: made }, (_, i) => ensureStream(jsm, streamConfig(i, made))));
    return remember(jsm, made);
  }
  const count = requested ?? DEFAULT_EVENT_STREAMS;
  // Stream 0 first: of two runners making a new log at once, the one that loses reads the other's count.
  await ensureStream(jsm, streamConfig(0, count));
  const settled = countOf(await firstStream(jsm)) ?? count;
  await Promise.all(Array.from({ length: settled - 1 }, (_, i) => ensureStream(jsm, streamConfig(i + 1, settled))));
  return remember(jsm, settled);
}

/**
 * How many streams the event log has, read from its first stream's
 * description once per connection. Before the log is made, the default
 * (not remembered): a read then finds nothing, as it would in any stream.
 */
export async function eventStreamCount(source: NatsConnection | JetStreamManager): Promise<number> {
  const nc = connectionOf(source);
  const cached = known.get(nc);
  if (cached !== undefined) return cached;
  const jsm = "streams" in source ? source : await jetstreamManager(nc);
  const count = countOf(await firstStream(jsm));
  if (count === null) return DEFAULT_EVENT_STREAMS;
  known.set(nc, count);
  return count;
}

/** The names of the event log's streams, in index order. */
export const eventStreamNames = (count: number): string[] => Array.from({ length: count }, (_, i) => eventStream(i));

async function firstStream(jsm: JetStreamManager): Promise<StreamInfo | null> {
  try {
    return await patientlySetUp(() => jsm.streams.info(eventStream(0)));
  } catch (error) {
    if (isStreamNotFound(error)) return null;
    throw error;
  }
}

async function refuseLegacy(jsm: JetStreamManager): Promise<void> {
  const legacy = await patientlySetUp(() => jsm.streams.info(LEGACY_EVENT_STREAM)).catch((error: unknown) => {
    if (isStreamNotFound(error)) return null;
    throw error;
  });
  if (legacy)
    throw new ConclaveError(
      "config",
      `the event log is one stream (${LEGACY_EVENT_STREAM}), made before it had several: stop the runners and run \`conclave migrate events\` (docs/operations.md, "Scaling out")`,
    );
}

function remember(jsm: JetStreamManager, count: number): number {
  known.set(connectionOf(jsm), count);
  return count;
}

function connectionOf(source: NatsConnection | JetStreamManager): NatsConnection {
  return "streams" in source ? (source as unknown as { nc: NatsConnection }).nc : source;
}
