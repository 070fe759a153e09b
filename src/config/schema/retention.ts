/**
 * Retention's variables: the maximum age of each store of user content, and the turns a session keeps
 * (docs/operations.md, "Data lifecycle"). Spread into CONFIG_SCHEMA by schema.ts.
 */
import { type ConfigVariable, duration, variable, wholeNumber } from "../variable.ts";

/** Retention's variables, in the order `conclave config` lists them. */
export const RETENTION_VARIABLES = {
  CONCLAVE_RETAIN_EVENTS: variable({
    group: "storage",
    schema: duration,
    defaultText: "left as the stream is",
    doc: "Maximum age of the event log's events (30d, 12h, 0 for ever; at least 1h).",
  }),
  CONCLAVE_RETAIN_TURN_STATUSES: variable({
    group: "storage",
    schema: duration,
    defaultText: "left as the bucket is",
    doc: "Maximum age of turn statuses, from their last change.",
  }),
  CONCLAVE_RETAIN_EPISODES: variable({
    group: "storage",
    schema: duration,
    defaultText: "left as the stream is",
    doc: "Maximum age of memory episodes.",
  }),
  CONCLAVE_RETAIN_MEMORY_GRAPH: variable({
    group: "storage",
    schema: duration,
    defaultText: "left as the bucket is",
    doc: "Maximum age of memory graph nodes and edges, from their last change (PostgreSQL: swept).",
  }),
  CONCLAVE_RETAIN_SESSION_STATE: variable({
    group: "storage",
    schema: duration,
    defaultText: "kept for ever",
    doc: "Maximum age of snapshots, checkpoints, idempotency keys, uncommitted memory (swept; turn counters stay).",
  }),
  CONCLAVE_RETAIN_BLACKBOARDS: variable({
    group: "storage",
    schema: duration,
    defaultText: "left as the bucket is",
    doc: "Maximum age of blackboards, from their last change (PostgreSQL: swept by the runner).",
  }),
  CONCLAVE_RETAIN_TURNS_PER_SESSION: variable({
    group: "storage",
    schema: wholeNumber(1),
    defaultText: "no limit",
    doc: "Most turns a session keeps; older ones lose their events, status and episode.",
  }),
} as const satisfies Record<string, ConfigVariable>;
