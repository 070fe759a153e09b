/** The turn WAL as tests see it: a session's subject and consumer in a WAL of the default partition count. */
import type { JetStreamManager } from "@nats-io/jetstream";
import { runnerConsumer, streams, subjects } from "../../src/bus/subjects.ts";
import { DEFAULT_PARTITIONS, partitionOf } from "../../src/contracts/partitions.ts";

/** The WAL subject of `sessionId`'s entries. */
export const walSubject = (sessionId: string): string => subjects.walOf(sessionId, DEFAULT_PARTITIONS);

/** The durable consumer a runner owning `sessionId`'s partition pulls. */
export const sessionConsumer = (sessionId: string): string =>
  runnerConsumer(partitionOf(sessionId, DEFAULT_PARTITIONS));

/** Entries waiting and delivered-unacked over every partition's consumer. */
export async function walConsumersState(
  jsm: JetStreamManager,
): Promise<{ num_pending: number; num_ack_pending: number }> {
  const infos = await Promise.all(
    Array.from({ length: DEFAULT_PARTITIONS }, (_, partition) =>
      jsm.consumers.info(streams.turns, runnerConsumer(partition)),
    ),
  );
  return {
    num_pending: infos.reduce((sum, info) => sum + info.num_pending, 0),
    num_ack_pending: infos.reduce((sum, info) => sum + info.num_ack_pending, 0),
  };
}
