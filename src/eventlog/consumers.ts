/**
 * The ephemeral JetStream consumers Conclave's readers make: ordered
 * consumers, each deleted by its reader once it is done, and made with a
 * short inactivity threshold so that one whose reader died (a process killed,
 * a connection cut) goes away within seconds rather than the library's
 * default five minutes. Left to expire, they piled up: a soak of 20 708 turns
 * held ~25 000 live consumers at once and nats-server grew to 2.4 GB.
 */
import type { Consumer, JetStreamClient, OrderedConsumerOptions } from "@nats-io/jetstream";

/**
 * How long nats-server keeps an ephemeral consumer nobody pulls from, in ms.
 * A reading consumer always has a pull request waiting (each lasts
 * PULL_EXPIRES_MS and is renewed as it ends), so only a consumer whose reader
 * is gone stays idle this long. The library's ordered consumer, when it has to
 * make its consumer again mid-read (a gap, missed heartbeats), makes the new
 * one with its own five minutes; deleting at the end covers that one too.
 */
export const EPHEMERAL_INACTIVE_MS = 5_000;

/** An ordered consumer on `stream` (as `js.consumers.get(stream, options)`), with the short inactivity threshold. */
export function orderedConsumer(
  js: JetStreamClient,
  stream: string,
  options: Partial<Omit<OrderedConsumerOptions, "inactive_threshold">>,
): Promise<Consumer> {
  return js.consumers.get(stream, { ...options, inactive_threshold: EPHEMERAL_INACTIVE_MS });
}

/**
 * Deletes the consumer from the server (the one it reads from now: an ordered
 * consumer made again mid-read is the new one). Best effort: a consumer
 * already gone, or a connection closed, leaves it to its inactivity threshold.
 */
export async function releaseConsumer(consumer: Consumer | undefined): Promise<void> {
  await consumer?.delete().catch(() => {});
}
