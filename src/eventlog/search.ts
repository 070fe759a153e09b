/**
 * Full-text search over a session's event log. Semantics, kept simple and
 * predictable:
 *
 * - the query is split into words (runs of letters and digits, any script),
 *   compared without regard to case;
 * - an event matches when every word occurs in its payload's text: the
 *   string, number and boolean values of its payload, at any depth (not the
 *   field names, so `user` does not match every TURN_STARTED), joined by
 *   spaces. A word matches inside a longer one (`dead` finds `deadline`);
 * - events are read in log order, over the range given (kinds, times,
 *   positions, a turn), and the first `limit` matches are returned, each
 *   with an excerpt of its text around the first match and where each
 *   query word occurs in that excerpt (to highlight).
 *
 * It reads the range's events (there is no index): narrow it with a time or
 * position range on a long log.
 */
import type { NatsConnection } from "@nats-io/nats-core";
import type { EngineEvent } from "../contracts/events.ts";
import { type EventRange, type LoggedEvent, scanEvents } from "./query.ts";

/** What `searchEvents` looks through, and how many matches it returns. */
export interface SearchOptions extends EventRange {
  /** The most matches returned, from the start of the range. Default 50. */
  limit?: number;
}

export const DEFAULT_SEARCH_LIMIT = 50;

/** One event that matches, with an excerpt of its text. */
export interface SearchHit extends LoggedEvent {
  /** Up to ~160 characters of the payload's text around the first match, `…` where it was cut. */
  excerpt: string;
  /** `[start, end)` of each occurrence of a query word in `excerpt`, in order, not overlapping. */
  highlights: [number, number][];
}

/** The words of a query (lowercase letters and digits runs). Empty when it has none: nothing to search for. */
export function searchWords(query: string): string[] {
  return [...new Set(query.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [])];
}

/** The text of an event's payload that search looks through: its values, not its field names. */
export function searchableText(event: EngineEvent): string {
  const parts: string[] = [];
  const walk = (value: unknown): void => {
    if (typeof value === "string") parts.push(value);
    else if (typeof value === "number" || typeof value === "boolean") parts.push(String(value));
    else if (Array.isArray(value)) for (const item of value) walk(item);
    else if (value !== null && typeof value === "object") for (const item of Object.values(value)) walk(item);
  };
  walk(event.payload);
  return parts.join(" ").replace(/\s+/g, " ");
}

const EXCERPT_BEFORE = 50;
const EXCERPT_LENGTH = 160;

/** Whether `text` holds every word, and if it does, its excerpt and highlights. */
export function matchText(text: string, words: readonly string[]): Pick<SearchHit, "excerpt" | "highlights"> | null {
  if (words.length === 0) return null;
  const lower = text.toLowerCase();
  // Lowercasing keeps the length of most text; where it does not, positions are found in the text itself.
  const sameLength = lower.length === text.length;
  let first = Number.POSITIVE_INFINITY;
  for (const word of words) {
    const at = lower.indexOf(word);
    if (at < 0) return null;
    first = Math.min(first, at);
  }
  if (!sameLength) first = 0;
  const start = Math.max(0, first - EXCERPT_BEFORE);
  const end = Math.min(text.length, start + EXCERPT_LENGTH);
  const cut = text.slice(start, end);
  const excerpt = `${start > 0 ? "…" : ""}${cut}${end < text.length ? "…" : ""}`;
  const offset = start > 0 ? 1 : 0;
  const found: [number, number][] = [];
  const lowerCut = excerpt.toLowerCase();
  if (lowerCut.length === excerpt.length)
    for (const word of words)
      for (let at = lowerCut.indexOf(word, offset); at >= 0; at = lowerCut.indexOf(word, at + word.length))
        found.push([at, at + word.length]);
  found.sort((a, b) => a[0] - b[0] || b[1] - a[1]);
  const highlights: [number, number][] = [];
  for (const span of found) {
    const previous = highlights.at(-1);
    if (previous && span[0] < previous[1]) previous[1] = Math.max(previous[1], span[1]);
    else highlights.push([span[0], span[1]]);
  }
  return { excerpt, highlights };
}

/**
 * The session's events in `options`' range whose payload holds every word of
 * `query` (see the module's semantics), in log order, at most `limit`.
 */
export async function searchEvents(
  nc: NatsConnection,
  sessionId: string,
  query: string,
  options: SearchOptions = {},
  signal?: AbortSignal,
): Promise<SearchHit[]> {
  const words = searchWords(query);
  const limit = options.limit ?? DEFAULT_SEARCH_LIMIT;
  const hits: SearchHit[] = [];
  if (words.length === 0 || limit <= 0) return hits;
  await scanEvents(
    nc,
    sessionId,
    options,
    (logged) => {
      const matched = matchText(searchableText(logged.event), words);
      if (matched) hits.push({ ...logged, ...matched });
      return hits.length < limit;
    },
    signal,
  );
  return hits;
}
