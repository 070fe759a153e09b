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

const mix = (hash: number, byte: number): number => Math.imul(hash ^ byte, 0x01000193) >>> 0;

/** 32-bit FNV-1a of the UTF-8 bytes of `text`: small, stable across languages, and well spread. */
export function fnv1a(text: string): number {
  // The UTF-8 bytes are hashed as they are worked out, none allocated: this runs for every event
  // the runner stores. A lone surrogate is U+FFFD's bytes, as TextEncoder writes it.
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    let code = text.charCodeAt(i);
    if (code < 0x80) {
      hash = mix(hash, code);
      continue;
    }
    if (code < 0x800) {
      hash = mix(hash, 0xc0 | (code >> 6));
      hash = mix(hash, 0x80 | (code & 0x3f));
      continue;
    }
    if (code >= 0xd800 && code <= 0xdfff) {
      const low = code <= 0xdbff && i + 1 < text.length ? text.charCodeAt(i + 1) : 0;
      if (low >= 0xdc00 && low <= 0xdfff) {
        i++;
        code = 0x10000 + ((code - 0xd800) << 10) + (low - 0xdc00);
        hash = mix(hash, 0xf0 | (code >> 18));
        hash = mix(hash, 0x80 | ((code >> 12) & 0x3f));
        hash = mix(hash, 0x80 | ((code >> 6) & 0x3f));
        hash = mix(hash, 0x80 | (code & 0x3f));
        continue;
      }
      code = 0xfffd;
    }
    hash = mix(hash, 0xe0 | (code >> 12));
    hash = mix(hash, 0x80 | ((code >> 6) & 0x3f));
    hash = mix(hash, 0x80 | (code & 0x3f));
  }
  return hash;
}

/** The partition of `sessionId` among `partitions`: FNV-1a of its id, modulo the count. */
export function partitionOf(sessionId: string, partitions: number): number {
  return fnv1a(sessionId) % partitions;
}
