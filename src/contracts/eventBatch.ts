/**
 * A stored message of the event log holds one event, or a batch of them (docs/protocol.md, "Reading a
 * turn's events"): `{"v":2,"events":[event, …]}`, consecutive events of one turn in `seq` order, each
 * as it would be stored alone. The writer stores a batch when events of a turn were appended while
 * the ones before them were being stored (src/eventlog/turnFencing.ts): one message, one
 * acknowledgement and one delivery to each reader instead of one per event.
 *
 * A batch is format 2 ({@link EVENT_BATCH_FORMAT}): a reader of older formats only refuses it rather
 * than take it for an invalid event and skip what it holds. 0.2.0 predates format versions and would
 * skip it: `CONCLAVE_EVENT_BATCHES=off` stores each event alone while it may read the log.
 */
import { type EngineEvent, parseStoredEvent } from "./events.ts";
import { checkRecordFormat, EVENT_BATCH_FORMAT, recordFormat } from "./format.ts";

/** What one stored message of the event log holds: its valid events, in order, and what was not valid in it. */
export interface StoredEvents {
  events: EngineEvent[];
  /** Set when the message, or an event of its batch, is not a valid event: that part is left out. */
  invalid?: unknown;
}

/** A stored event's JSON before it is parsed: what a reader may pick it by. */
export type RawEvent = { kind?: unknown; turn_id?: unknown };

const decoder = new TextDecoder();

/**
 * A stored message's JSON read as its events: one, or a batch's. A record of a newer format than this
 * process reads throws `FormatTooNewError` (misreading it would be worse than stopping); `where` names
 * the message in errors. `wanted` picks events by their raw JSON before they are parsed (a reader
 * after some kinds only: parsing every event is most of a read's cost); the others are left out.
 */
export function parseStoredEvents(json: unknown, where: string, wanted?: (raw: RawEvent) => boolean): StoredEvents {
  checkRecordFormat(json, where);
  if (recordFormat(json) !== EVENT_BATCH_FORMAT) {
    if (wanted && !wanted((json ?? {}) as RawEvent)) return { events: [] };
    const parsed = parseStoredEvent(json, where);
    return parsed.success ? { events: [parsed.data as EngineEvent] } : { events: [], invalid: parsed.error };
  }
  const batch = rawEventsOf(json);
  if (batch.length === 0) return { events: [], invalid: new Error(`${where} is a batch without events`) };
  const events: EngineEvent[] = [];
  let invalid: unknown;
  batch.forEach((item, index) => {
    if (wanted && !wanted((item ?? {}) as RawEvent)) return;
    const parsed = parseStoredEvent(item, `${where}, event ${index} of its batch`);
    if (parsed.success) events.push(parsed.data as EngineEvent);
    else invalid ??= parsed.error;
  });
  return invalid === undefined ? { events } : { events, invalid };
}

/** The events a stored message's JSON holds, unparsed: a batch's, else the message itself (none: an empty batch). */
export function rawEventsOf(json: unknown): unknown[] {
  if (recordFormat(json) !== EVENT_BATCH_FORMAT) return [json];
  const batch = (json as { events?: unknown }).events;
  return Array.isArray(batch) ? batch : [];
}

/** A stored message's bytes read as its events (`parseStoredEvents`); bytes that are not JSON are invalid. */
export function decodeStoredEvents(data: Uint8Array, where: string, wanted?: (raw: RawEvent) => boolean): StoredEvents {
  let json: unknown;
  try {
    json = JSON.parse(decoder.decode(data));
  } catch (error) {
    return { events: [], invalid: error };
  }
  return parseStoredEvents(json, where, wanted);
}

/**
 * The header a stored batch carries its event count in, so a reader of headers alone (a consumer with
 * `headers_only`) counts the events without reading them; a message without it holds one event.
 */
export const EVENT_COUNT_HEADER = "Conclave-Events";

/** The events a stored message holds, from its `Conclave-Events` header's value (absent: one). */
export function eventCountOf(header: string | undefined | null): number {
  const count = header ? Number.parseInt(header, 10) : 1;
  return Number.isInteger(count) && count > 0 ? count : 1;
}

const BATCH_OPEN = new TextEncoder().encode(`{"v":${EVENT_BATCH_FORMAT},"events":[`);
const BATCH_CLOSE = new TextEncoder().encode("]}");
const COMMA = 0x2c;

/**
 * The stored batch of events already encoded one by one (each `{"v":1,…}`, as stored alone): their
 * bytes are joined, not encoded again.
 */
export function encodeEventBatch(encoded: readonly Uint8Array[]): Uint8Array {
  let size = BATCH_OPEN.length + BATCH_CLOSE.length + Math.max(0, encoded.length - 1);
  for (const data of encoded) size += data.length;
  const out = new Uint8Array(size);
  out.set(BATCH_OPEN, 0);
  let at = BATCH_OPEN.length;
  encoded.forEach((data, index) => {
    if (index > 0) out[at++] = COMMA;
    out.set(data, at);
    at += data.length;
  });
  out.set(BATCH_CLOSE, at);
  return out;
}
