import type { LearnedItem, Learning } from "./extract.ts";

/**
 * Folding what a turn taught into what memory already holds. Pure: the inputs are not changed,
 * the result is new arrays (untouched facts and threads are the same objects), so a store can diff,
 * persist, or throw away the result.
 */

/** A user fact as memory keeps it: one per key. */
export interface Fact {
  /** The slot (see `LearnedItem.key`): a later fact with the same key replaces this one's text. */
  key: string;
  text: string;
  topics: string[];
  /** How many turns stated this slot: 1 when first learned, +1 each time it is said again or updated. */
  recurrence: number;
  /** The turn that first stated it. */
  created_at: number;
  /** The turn that last stated it (the recency used by ranking). */
  updated_at: number;
}

/** A thread: something left open, until a turn closes it. One per key, ever. */
export interface Thread {
  /** `<kind>.<slug>` (see `LearnedItem.key`). */
  key: string;
  text: string;
  topics: string[];
  status: "open" | "closed";
  /** The turn that (last) opened it. */
  opened_at_turn: number;
  /** The turn that closed it; only while closed. */
  closed_at_turn?: number;
  /** How many turns opened it, or brought it up again while open. */
  recurrence: number;
  /** The turn that last opened or closed it. */
  updated_at: number;
}

/** What memory holds, as {@link mergeLearning} needs it. */
export interface MemoryState {
  facts: readonly Fact[];
  threads: readonly Thread[];
}

/** What a merge changed, by key: for the memory commit's summary and for tests. */
export interface MergeChanges {
  facts_added: string[];
  facts_updated: string[];
  threads_opened: string[];
  threads_reopened: string[];
  threads_closed: string[];
}

/** The merged memory and what changed. */
export interface MergeResult {
  facts: Fact[];
  threads: Thread[];
  changes: MergeChanges;
}

/**
 * Folds one turn's {@link Learning} into memory, as of turn `turnId`:
 *
 * - Facts are deduplicated by key: a known key gets the new text and topics, `recurrence` + 1 and
 *   `updated_at = turnId` (so "I now work days" replaces "works night shifts"); a new key is added
 *   with recurrence 1. Within one learning the last fact of a key wins. A fact already stated by
 *   turn `turnId` (the same turn merged again: a commit retried) keeps its recurrence.
 * - Threads resolved by the turn (`threads_resolved_keys`) that are open are closed:
 *   `status: "closed"`, `closed_at_turn = turnId`. Unknown or already closed keys are ignored.
 * - Threads opened by the turn exist once per key: a new key is added open; an open one is brought
 *   up again (`recurrence` + 1, text refreshed); a closed one is reopened (the user raised it again).
 *   Closing happens first, so a turn that closes a thread and raises it again leaves it open: the
 *   later statement wins.
 *
 * Order is kept: existing entries where they were, new ones appended in the order learned.
 */
export function mergeLearning(
  existing: MemoryState,
  learning: Pick<Learning, "facts" | "threads_opened" | "threads_resolved_keys">,
  turnId: number,
): MergeResult {
  const changes: MergeChanges = {
    facts_added: [],
    facts_updated: [],
    threads_opened: [],
    threads_reopened: [],
    threads_closed: [],
  };

  const facts = [...existing.facts];
  const factAt = indexByKey(facts);
  for (const item of lastPerKey(learning.facts)) {
    const at = factAt.get(item.key);
    const known = at === undefined ? undefined : facts[at];
    if (at !== undefined && known) {
      facts[at] = {
        ...known,
        text: item.text,
        topics: [...item.topics],
        // Stated by this very turn already (its commit is being made again): not one more time.
        recurrence: known.updated_at === turnId ? known.recurrence : known.recurrence + 1,
        updated_at: turnId,
      };
      changes.facts_updated.push(item.key);
    } else {
      factAt.set(item.key, facts.length);
      facts.push({
        key: item.key,
        text: item.text,
        topics: [...item.topics],
        recurrence: 1,
        created_at: turnId,
        updated_at: turnId,
      });
      changes.facts_added.push(item.key);
    }
  }

  const threads = [...existing.threads];
  const threadAt = indexByKey(threads);
  for (const key of new Set(learning.threads_resolved_keys)) {
    const at = threadAt.get(key);
    const thread = at === undefined ? undefined : threads[at];
    if (at === undefined || !thread || thread.status !== "open") continue;
    threads[at] = { ...thread, status: "closed", closed_at_turn: turnId, updated_at: turnId };
    changes.threads_closed.push(key);
  }
  for (const item of lastPerKey(learning.threads_opened)) {
    const at = threadAt.get(item.key);
    const thread = at === undefined ? undefined : threads[at];
    if (at === undefined || !thread) {
      threadAt.set(item.key, threads.length);
      threads.push({
        key: item.key,
        text: item.text,
        topics: [...item.topics],
        status: "open",
        opened_at_turn: turnId,
        recurrence: 1,
        updated_at: turnId,
      });
      changes.threads_opened.push(item.key);
      continue;
    }
    const { closed_at_turn: _closed, ...rest } = thread;
    const reopened = thread.status === "closed";
    threads[at] = {
      ...rest,
      text: item.text,
      topics: [...item.topics],
      status: "open",
      opened_at_turn: reopened ? turnId : thread.opened_at_turn,
      // Brought up by this very turn already (its commit is being made again): not one more time.
      recurrence: existing.threads[at]?.updated_at === turnId ? thread.recurrence : thread.recurrence + 1,
      updated_at: turnId,
    };
    if (reopened) {
      changes.threads_reopened.push(item.key);
      // Closed and raised again in the same turn: report it as reopened only.
      const closedNow = changes.threads_closed.indexOf(item.key);
      if (closedNow >= 0) changes.threads_closed.splice(closedNow, 1);
    }
  }

  return { facts, threads, changes };
}

/** The open threads, as extraction and ranking want them. */
export function openThreads(threads: readonly Thread[]): Thread[] {
  return threads.filter((thread) => thread.status === "open");
}

/** Index of each key's first entry (a store that holds duplicates updates the first). */
function indexByKey(entries: readonly { key: string }[]): Map<string, number> {
  const at = new Map<string, number>();
  entries.forEach((entry, index) => {
    if (!at.has(entry.key)) at.set(entry.key, index);
  });
  return at;
}

function lastPerKey(items: readonly LearnedItem[]): LearnedItem[] {
  const byKey = new Map<string, LearnedItem>();
  for (const item of items) byKey.set(item.key, item);
  return [...byKey.values()];
}
