import type { z } from "zod";
import { withFormat } from "../contracts/format.ts";
import { describeIssues } from "../contracts/issues.ts";
import { HandlerError } from "./errors.ts";

// fatal: invalid UTF-8 is bad input, not text to repair silently.
const decoder = new TextDecoder("utf-8", { fatal: true });
const encoder = new TextEncoder();

export const encodeJson = (value: unknown): Uint8Array => encoder.encode(JSON.stringify(value));

/** A record to store (an event, a WAL entry, a KV value), stamped with this release's format version (`v`). */
export const encodeRecord = (record: object): Uint8Array => encodeJson(withFormat(record));

/**
 * Deepest nesting of arrays and objects a message body may have. Deeper
 * bodies are refused before they are parsed: the JSON they hold would
 * overflow the stack of every recursive walk after parsing (a schema,
 * `JSON.stringify`, `structuredClone`), far from the boundary that let them in.
 */
export const MAX_JSON_DEPTH = 64;

const OPEN_ARRAY = 0x5b;
const OPEN_OBJECT = 0x7b;
const CLOSE_ARRAY = 0x5d;
const CLOSE_OBJECT = 0x7d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * How deeply the JSON text in `data` nests, up to `limit + 1` (it stops
 * there). One pass over the bytes, no recursion: brackets inside strings do
 * not count, and UTF-8 continuation bytes never equal the ASCII ones looked for.
 */
export function jsonDepth(data: Uint8Array, limit = MAX_JSON_DEPTH): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < data.length; i++) {
    const byte = data[i];
    if (inString) {
      if (byte === BACKSLASH) i++;
      else if (byte === QUOTE) inString = false;
    } else if (byte === QUOTE) inString = true;
    else if (byte === OPEN_ARRAY || byte === OPEN_OBJECT) {
      depth++;
      if (depth > deepest) {
        deepest = depth;
        if (deepest > limit) return deepest;
      }
    } else if (byte === CLOSE_ARRAY || byte === CLOSE_OBJECT) depth--;
  }
  return deepest;
}

/**
 * Parses and validates a message body, or throws a HandlerError that says
 * exactly what is wrong (bad_json, invalid_request or payload_too_large).
 * A body nested deeper than {@link MAX_JSON_DEPTH} is `invalid_request`.
 */
export function decodeJson<S extends z.ZodType>(
  data: Uint8Array,
  schema: S,
  what: string,
  maxBytes = 1_048_576,
): z.infer<S> {
  if (data.length > maxBytes) {
    throw new HandlerError("payload_too_large", `${what} is ${data.length} bytes; the limit is ${maxBytes}`);
  }
  if (jsonDepth(data) > MAX_JSON_DEPTH) {
    throw new HandlerError("invalid_request", `${what} nests deeper than ${MAX_JSON_DEPTH} levels`);
  }
  let value: unknown;
  try {
    value = JSON.parse(decoder.decode(data));
  } catch (error) {
    throw new HandlerError("bad_json", `${what} is not valid JSON: ${(error as Error).message}`);
  }
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    const issues = describeIssues(parsed.error);
    throw new HandlerError("invalid_request", `${what} is invalid: ${issues.join("; ")}`, issues);
  }
  return parsed.data;
}
