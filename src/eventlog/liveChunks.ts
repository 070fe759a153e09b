import type { NatsConnection } from "@nats-io/nats-core";
import { subjects } from "../bus/subjects.ts";
import { publishJson } from "../bus/wire.ts";
import type { LiveChunk } from "../contracts/events.ts";

/**
 * Publishes one stream chunk on its turn's live subject
 * (`conclave.live.<session>.<turn>`), core NATS: at most once, never stored.
 * Readers merge it with the log, which stores it coalesced (see
 * src/client/liveChunks.ts), so one lost on the way costs nothing but its
 * earliness. A closed or draining connection sends nothing.
 */
export function sendLiveChunk(nc: NatsConnection, chunk: LiveChunk): void {
  if (nc.isClosed()) return;
  try {
    publishJson(nc, subjects.liveChunks(chunk.session_id, chunk.turn_id), chunk);
  } catch {
    // Closing or draining: live readers get the chunk from the log.
  }
}
