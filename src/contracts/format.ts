/**
 * The format version of everything Conclave stores or sends (docs/protocol.md, "Format versions").
 *
 * One number, the format's major version, for the whole protocol: stored JSON records carry it as
 * their top-level `v`, and wire messages (requests, replies, published notices) as the
 * `Conclave-Format` header (a header, because some request schemas refuse unknown fields, and a
 * process of the previous release must still accept what this one sends during a rolling upgrade).
 *
 * Additive changes (a new optional field, a new event kind) keep the major: readers ignore what they
 * do not know. A change an older reader would misread raises it, and an older reader then refuses
 * the record with {@link FormatTooNewError} instead of misreading it. A record without a version was
 * written before formats were versioned (release 0.2.0 and earlier): format 0, read as before.
 */
import type { z } from "zod";
import { ConclaveError } from "../errors.ts";

/** The format major this release writes (every record and message but a batch of events). */
export const FORMAT_VERSION = 1;

/**
 * The format major of a stored batch of events (docs/protocol.md, "Reading a turn's events"): a
 * reader of format 1 would take it for an invalid event and skip the events it holds, so it refuses it
 * (0.2.0, which checks no format, would skip it: see `CONCLAVE_EVENT_BATCHES`).
 */
export const EVENT_BATCH_FORMAT = 2;

/** The newest format major this release reads. */
export const READ_FORMAT_VERSION = EVENT_BATCH_FORMAT;

/** The header wire messages carry their format major in. */
export const FORMAT_HEADER = "Conclave-Format";

/** A record or message in a newer format than this process reads: upgrade the process. */
export class FormatTooNewError extends ConclaveError<"format_too_new"> {
  constructor(
    /** What was being read: "event conclave.events.… seq 4", "KV conclave-sessions/…", a subject. */
    readonly what: string,
    /** The format major it carries. */
    readonly found: number,
  ) {
    super(
      "format_too_new",
      `${what} is in format ${found}; this Conclave reads formats up to ${READ_FORMAT_VERSION}: upgrade this process`,
    );
  }
}

/** The format major of a stored JSON record: its `v`, or 0 when it has none (written before 0.3.0). */
export function recordFormat(record: unknown): number {
  if (typeof record !== "object" || record === null || Array.isArray(record)) return 0;
  const v = (record as { v?: unknown }).v;
  return typeof v === "number" && Number.isInteger(v) && v >= 0 ? v : 0;
}

/** Throws {@link FormatTooNewError} when a stored record is in a newer format than this process reads. */
export function checkRecordFormat(record: unknown, what: string): void {
  const found = recordFormat(record);
  if (found > READ_FORMAT_VERSION) throw new FormatTooNewError(what, found);
}

/** The record as stored: this format's `v` first, then its own fields (no stored record has a `v` of its own). */
export function withFormat<T extends object>(record: T): T & { v: number } {
  return { v: FORMAT_VERSION, ...record };
}

/**
 * The format major a wire message's header value names: 0 when absent (a sender of 0.2.0 or
 * earlier, or a client outside Conclave that does not say), the number otherwise. A value that is
 * not a number is treated as absent: the body's own schema still guards what is read.
 */
export function headerFormat(value: string | undefined | null): number {
  if (!value) return 0;
  const major = Number.parseInt(value, 10);
  return Number.isInteger(major) && major >= 0 ? major : 0;
}

/** Throws {@link FormatTooNewError} when a wire message's header names a newer format than this process reads. */
export function checkHeaderFormat(value: string | undefined | null, what: string): void {
  const found = headerFormat(value);
  if (found > READ_FORMAT_VERSION) throw new FormatTooNewError(what, found);
}

/**
 * A stored record's JSON checked by its schema, after its format: a newer format fails with
 * {@link FormatTooNewError} as the error (for readers that skip and report what they cannot read),
 * anything else as the schema says.
 */
export function parseRecord<T>(
  schema: z.ZodType<T>,
  json: unknown,
  what: string,
): { success: true; data: T } | { success: false; error: FormatTooNewError | z.ZodError } {
  const found = recordFormat(json);
  if (found > READ_FORMAT_VERSION) return { success: false, error: new FormatTooNewError(what, found) };
  return schema.safeParse(json);
}
