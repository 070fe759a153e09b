/**
 * The event log writer's variables: how stream chunks are coalesced, whether a turn's events are stored
 * in batches, and what the log records (src/eventlog/writer.ts, levels.ts). Spread into CONFIG_SCHEMA by
 * schema.ts.
 */
import { type ConfigVariable, flag, oneOf, variable, wholeNumber } from "../variable.ts";

/** The event log writer's variables, in the order `conclave config` lists them. */
export const EVENT_LOG_VARIABLES = {
  CONCLAVE_STREAM_CHUNK_MS: variable({
    group: "runner",
    schema: wholeNumber(0, 60_000),
    default: 25,
    doc: "How long a stream chunk may wait to be stored with the next ones (0: each stored alone).",
  }),
  CONCLAVE_STREAM_CHUNK_BYTES: variable({
    group: "runner",
    schema: wholeNumber(1, 65_536),
    default: 4_096,
    doc: "Buffered stream text (UTF-8 bytes) that stores the buffered chunks at once.",
  }),
  CONCLAVE_EVENT_BATCHES: variable({
    group: "runner",
    schema: flag,
    default: true,
    doc: "on: the events a turn appends while its earlier ones are being stored go into the log as one message (a batch, format 2; docs/protocol.md). off: one message per event, as releases before 0.3.0 wrote and read it; keep it off on the new processes while a rolling upgrade from such a release (or a rollback to it) is under way.",
  }),
  CONCLAVE_EVENT_LEVEL: variable({
    group: "runner",
    schema: oneOf(["audit", "ops", "debug"]),
    default: "ops",
    doc: "What the event log records (src/eventlog/levels.ts): audit (what governance, replay and takeover need), ops (everything, the default) or debug (ops and future detail). It never changes what a turn does.",
  }),
} as const satisfies Record<string, ConfigVariable>;
