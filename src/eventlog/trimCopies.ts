/**
 * Retention by count, for the copies: a turn's MEMORY_RETRIEVED holds the
 * text of what retrieval gave it (older turns' episodes, facts, threads).
 * When a turn is trimmed, every MEMORY_RETRIEVED still on the log that holds
 * that turn's content (an episode of it or of an earlier turn, or the text of
 * a fact or thread the trim removed from the memory graph) is removed too,
 * with the secure delete, so no copy outlives its source. The rest of those
 * turns' events stay: replay does not fold what retrieval gave. See
 * docs/operations.md, "Data lifecycle".
 */
import type { JetStreamManager, StoredMsg } from "@nats-io/jetstream";
import { streams, subjects } from "../bus/subjects.ts";
import { secureErase } from "../runtime/intake/eraseSecure.ts";
import type { Logger } from "../runtime/log.ts";

const decoder = new TextDecoder();

/** What a MEMORY_RETRIEVED payload holds that can be another turn's content. */
interface Retrieved {
  episodes?: { turn_id?: unknown }[];
  user_facts?: unknown[];
  open_threads?: unknown[];
}

/** Whether a stored event is a MEMORY_RETRIEVED holding content of turn `trimmed` or earlier, or one of `texts`. */
export function holdsTrimmedCopy(data: Uint8Array, trimmed: number, texts: ReadonlySet<string>): boolean {
  let event: { kind?: unknown; payload?: Retrieved };
  try {
    event = JSON.parse(decoder.decode(data));
  } catch {
    return false;
  }
  if (event?.kind !== "MEMORY_RETRIEVED" || !event.payload) return false;
  const { episodes = [], user_facts = [], open_threads = [] } = event.payload;
  if (episodes.some((episode) => typeof episode?.turn_id === "number" && episode.turn_id <= trimmed)) return true;
  return [...user_facts, ...open_threads].some((text) => typeof text === "string" && texts.has(text));
}

/**
 * Removes the copies of trimmed turn `trimmed`'s content from the events of
 * the session's turns after it, through `through`: how many events.
 */
export async function trimRetrievedCopies(
  jsm: JetStreamManager,
  log: Logger,
  sessionId: string,
  trimmed: number,
  through: number,
  texts: ReadonlySet<string>,
): Promise<number> {
  let removed = 0;
  const matches = (msg: StoredMsg) => holdsTrimmedCopy(msg.data, trimmed, texts);
  const progress = { log, label: `trim of session ${sessionId}: copies in later turns` };
  for (let turn = trimmed + 1; turn <= through; turn++) {
    removed += await secureErase(jsm, streams.events, subjects.turnEvents(sessionId, turn), progress, { matches });
  }
  return removed;
}
