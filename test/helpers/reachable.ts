/**
 * Where a piece of a session's content can still be reached (issue 41): the
 * session's events, memory search, and every store that holds its content,
 * read message by message. Retention tests poll it until a trimmed or
 * expired canary is found nowhere.
 */
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import { isStreamNotFound } from "../../src/bus/errors.ts";
import { buckets, eventStreamOf, streams, subjects } from "../../src/bus/subjects.ts";
import type { ConclaveClient } from "../../src/client/index.ts";
import { nextMessage } from "../../src/eventlog/eraseSecure.ts";
import { eventStreamCount } from "../../src/eventlog/eventStreams.ts";
import { readEvents } from "../../src/eventlog/reader.ts";
import { walSubject } from "./wal.ts";

/** The connections the search reads through. */
export interface ReachableVia {
  client: ConclaveClient;
  /** An observer's: reads the session's events. */
  observer: NatsConnection;
  /** A runner's: reads stored messages by sequence, which only the runner role may. */
  inspector: NatsConnection;
}

const decoder = new TextDecoder();

/** Every stored message of `stream` on `filter` that holds `text` (case-insensitive): where it is. */
export async function storedCopies(
  inspector: NatsConnection,
  stream: string,
  filter: string,
  text: string,
): Promise<string[]> {
  const jsm = await jetstreamManager(inspector);
  const needle = text.toLowerCase();
  const found: string[] = [];
  for (let seq = 1; ; ) {
    const msg = await nextMessage(jsm, stream, filter, seq).catch((error: unknown) => {
      if (isStreamNotFound(error)) return null;
      throw error;
    });
    if (!msg || msg.seq < seq) return found;
    if (`${msg.subject} ${decoder.decode(msg.data)}`.toLowerCase().includes(needle))
      found.push(`${stream} ${msg.subject}`);
    seq = msg.seq + 1;
  }
}

/**
 * Where `text` (case-insensitive) can still be reached in `session`: its events (every kind,
 * MEMORY_RETRIEVED included), memory search, its event stream, episodes, WAL and every KV bucket
 * of its content. Empty: nowhere.
 */
export async function reachable(via: ReachableVia, session: string, text: string): Promise<string[]> {
  const needle = text.toLowerCase();
  const [js, jsm] = [jetstream(via.observer), await jetstreamManager(via.observer)];
  const events = (await readEvents(js, jsm, session)).filter((event) =>
    JSON.stringify(event).toLowerCase().includes(needle),
  );
  const searched = await via.client.memory.search(session, text, { limit: 100 }).catch(() => []);
  const count = await eventStreamCount(via.inspector);
  const stores = await Promise.all([
    storedCopies(via.inspector, eventStreamOf(session, count), subjects.sessionLog(session, count), needle),
    storedCopies(via.inspector, streams.memory, subjects.memoryEpisode(session, 0).replace(/\.0$/, ".*"), needle),
    storedCopies(via.inspector, streams.turns, walSubject(session), needle),
    ...[buckets.turns, buckets.sessions, buckets.memoryGraph, buckets.ledgers, "conclave_blackboards"].map((bucket) =>
      storedCopies(via.inspector, `KV_${bucket}`, `$KV.${bucket}.>`, needle),
    ),
  ]);
  return [
    ...events.map((event) => `event ${event.turn_id}/${event.seq} ${event.kind}`),
    ...searched.filter((item) => item.text.toLowerCase().includes(needle)).map((item) => `search ${item.kind}`),
    ...stores.flat(),
  ];
}
