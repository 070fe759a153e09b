import type { NatsConnection } from "@nats-io/nats-core";
import { EVENT_KINDS, type EventKind } from "../contracts/events.ts";
import { checkSessionId, checkTurnId } from "../contracts/ids.ts";
import { InvalidRequestError } from "../errors.ts";
import { type EventQuery, type EventRange, type LoggedEvent, MAX_QUERY_LIMIT, queryEvents } from "../eventlog/query.ts";
import { type SearchHit, type SearchOptions, searchEvents } from "../eventlog/search.ts";
import { readTapeStatus, type TapeStatus } from "../eventlog/tapeStatus.ts";

/** Reading a session's tape (its event log): ranges, search, status. See docs/operations.md, "The tape". */
export interface TapeClient {
  /**
   * The session's stored events in a range (kinds, stored times, positions, a turn), in log order, with
   * their positions and stored times: the first `limit` (default 1 000). A bad range rejects with
   * `invalid_request`.
   */
  queryEvents(sessionId: string, query?: EventQuery): Promise<LoggedEvent[]>;
  /**
   * The session's stored events whose payload holds every word of `text` (case-insensitive, values only,
   * a word may match inside a longer one), in log order, the first `limit` (default 50), each with an
   * excerpt to show and the spans to highlight in it. A query without words rejects with `invalid_request`.
   */
  searchEvents(sessionId: string, text: string, options?: SearchOptions): Promise<SearchHit[]>;
  /**
   * How much the session's tape holds (events, turns, bytes, first and last) and its last replay
   * checkpoint, which the client role cannot read: `checkpoint_unavailable` says so
   * (`conclave events status` reads it with runner credentials).
   */
  tapeStatus(sessionId: string): Promise<TapeStatus>;
}

const isPosition = (value: unknown): boolean => Number.isInteger(value) && (value as number) >= 1;

const isTime = (value: unknown): boolean =>
  (value instanceof Date && !Number.isNaN(value.getTime())) || (typeof value === "number" && Number.isFinite(value));

const epochMs = (time: Date | number): number => (typeof time === "number" ? time : time.getTime());

/** Throws InvalidRequestError for a range that cannot be one; returns it as given otherwise. */
export function checkRange(range: EventRange & { limit?: number }): void {
  for (const field of ["fromSeq", "toSeq"] as const)
    if (range[field] !== undefined && !isPosition(range[field]))
      throw new InvalidRequestError(`bad ${field} ${String(range[field])}: a position, a whole number from 1`);
  if (range.fromSeq !== undefined && range.toSeq !== undefined && range.fromSeq > range.toSeq)
    throw new InvalidRequestError(`bad range: fromSeq ${range.fromSeq} is after toSeq ${range.toSeq}`);
  for (const field of ["since", "until"] as const)
    if (range[field] !== undefined && !isTime(range[field]))
      throw new InvalidRequestError(`bad ${field} ${String(range[field])}: a Date or epoch milliseconds`);
  if (range.since !== undefined && range.until !== undefined && epochMs(range.since) > epochMs(range.until))
    throw new InvalidRequestError("bad range: since is after until");
  if (range.turnId !== undefined) checkTurnId(range.turnId);
  for (const kind of range.kinds ?? [])
    if (!EVENT_KINDS.includes(kind as EventKind))
      throw new InvalidRequestError(`unknown event kind ${JSON.stringify(kind).slice(0, 60)}`);
  if (
    range.limit !== undefined &&
    !(Number.isInteger(range.limit) && range.limit >= 1 && range.limit <= MAX_QUERY_LIMIT)
  )
    throw new InvalidRequestError(`bad limit ${String(range.limit)}: a whole number from 1 to ${MAX_QUERY_LIMIT}`);
}

/** The tape methods of a client on `nc`. */
export function tapeClient(nc: NatsConnection): TapeClient {
  return {
    queryEvents: async (sessionId, query = {}) => {
      checkSessionId(sessionId);
      checkRange(query);
      return queryEvents(nc, sessionId, query);
    },
    searchEvents: async (sessionId, text, options = {}) => {
      checkSessionId(sessionId);
      checkRange(options);
      if (typeof text !== "string" || !/[\p{L}\p{N}]/u.test(text))
        throw new InvalidRequestError("nothing to search for: give at least one word (letters or digits)");
      return searchEvents(nc, sessionId, text, options);
    },
    tapeStatus: async (sessionId) => {
      checkSessionId(sessionId);
      return readTapeStatus(nc, sessionId);
    },
  };
}
