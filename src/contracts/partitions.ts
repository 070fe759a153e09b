/**
 * WAL partitions: every session belongs to one of P partitions of the turn
 * WAL, by a hash of its id, and each runner takes the turns of the
 * partitions it owns (docs/operations.md, "Scaling out"). P is fixed when the
 * WAL is made (`CONCLAVE_PARTITIONS`, default {@link DEFAULT_PARTITIONS}); the
 * hash is part of the protocol (docs/protocol.md): an outside client that
 * writes a WAL entry computes it the same way.
 */

/** Partitions of a WAL made without `CONCLAVE_PARTITIONS`. */
export const DEFAULT_PARTITIONS = 16;

/** The most partitions a WAL may have: each is a durable consumer (a Raft group on a cluster). */
export const MAX_PARTITIONS = 256;

/** Streams of an event log made without `CONCLAVE_EVENT_STREAMS` (src/eventlog/eventStreams.ts): one leader per node of a three-node cluster. */
export const DEFAULT_EVENT_STREAMS = 3;

/** The most streams an event log may have (the roles in nats.conf name each one). */
export const MAX_EVENT_STREAMS = 16;

const encoder = new TextEncoder();

/** 32-bit FNV-1a of the UTF-8 bytes of `text`: small, stable across languages, and well spread. */
export function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (const byte of encoder.encode(text)) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash >>> 0;
}

/** The partition of `sessionId` among `partitions`: FNV-1a of its id, modulo the count. */
export function partitionOf(sessionId: string, partitions: number): number {
  return fnv1a(sessionId) % partitions;
}
