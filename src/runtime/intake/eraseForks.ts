/**
 * Which sessions were forked from which: an index in the sessions bucket,
 * `forks.<source>.<fork>` (ids only), written by the fork (fork.ts) and read by
 * an erase, which names a session's forks in its record or, asked to
 * (`with_forks`), erases them too (erase.ts).
 */
import type { JetStreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/nats-core";
import { encodeRecord } from "../../bus/codec.ts";
import { isStreamNotFound } from "../../bus/errors.ts";
import { buckets } from "../../bus/subjects.ts";

/** The index key of a fork: `forks.<source>.<fork>`. */
export const forkKey = (sourceId: string, forkId: string) => `forks.${sourceId}.${forkId}`;

/** Notes that `forkId` was forked from `sourceId` at `atTurn`. */
export async function recordFork(nc: NatsConnection, sourceId: string, forkId: string, atTurn: number): Promise<void> {
  const kv = await new Kvm(nc).open(buckets.sessions);
  await kv.put(forkKey(sourceId, forkId), encodeRecord({ at_turn: atTurn }));
}

/** The sessions forked from `sessionId` (directly), sorted. */
export async function forksOf(jsm: JetStreamManager, sessionId: string): Promise<string[]> {
  const prefix = `$KV.${buckets.sessions}.${forkKey(sessionId, "")}`;
  try {
    const info = await jsm.streams.info(`KV_${buckets.sessions}`, { subjects_filter: `${prefix}*` });
    return Object.keys(info.state.subjects ?? {})
      .map((subject) => subject.slice(prefix.length))
      .sort();
  } catch (error) {
    if (isStreamNotFound(error)) return [];
    throw error;
  }
}
