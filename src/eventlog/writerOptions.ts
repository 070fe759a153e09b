import type { NatsConnection } from "@nats-io/nats-core";
import { ConclaveError } from "../errors.ts";
import type { Schedule, StreamChunkOptions } from "./chunkCoalescer.ts";
import type { EventLevel } from "./levels.ts";

/** Raised by `finish` when some event of the turn could not be stored, or another writer took the turn. */
export class EventLogError extends ConclaveError<"event_log"> {
  constructor(message: string, options?: ErrorOptions) {
    super("event_log", message, options);
  }
}

export interface EventLogWriterOptions extends Partial<StreamChunkOptions> {
  /** How long one event may take to be stored, retries included (e.g. across a NATS restart). Default 60 s. */
  storeTimeoutMs: number;
  /** Called once when another writer is found writing the same turn (this one must stop). */
  onFenced?: (sessionId: string, turnId: number) => void;
  /**
   * Where every stream chunk also goes out live, one message each, on core NATS
   * (`conclave.live.<session>.<turn>`, a LiveChunk) as it is appended. Absent: nothing goes out live.
   */
  live?: NatsConnection;
  /**
   * Publish the events over this connection's own reply inbox (src/bus/inboxRequests.ts) rather than
   * `js.publish`, which builds an error object after every publish that succeeds. Absent: `js.publish`.
   */
  transport?: NatsConnection;
  /** When a buffered run of chunks is stored for its age (`chunkMs`). A seam for tests; default setTimeout. */
  schedule?: Schedule;
  /**
   * What is recorded (levels.ts): kinds above it are dropped before they get a seq, so a turn's seqs stay
   * contiguous; a dropped stream chunk still goes out live. Default: `CONCLAVE_EVENT_LEVEL`, else `ops`.
   */
  level?: EventLevel;
  /**
   * Store the events appended while earlier ones of the turn are being stored as one message, a batch
   * (format 2, contracts/eventBatch.ts); false: one message per event, as releases before 0.3.0 read.
   * Default: `CONCLAVE_EVENT_BATCHES`, else true.
   */
  batches?: boolean;
}
