import { topicsOf } from "./topics.ts";

/**
 * Choosing what memory to put in front of the model for a message, within a token budget.
 * Built for thousands of items per turn: everything the order needs is computed once per item
 * into typed arrays, and the comparator only reads numbers.
 */

/** Something memory can recall: an episode, a user fact or an open thread (stored nodes fit). */
export interface RankItem {
  id: string;
  kind: "episode" | "fact" | "thread";
  text: string;
  topics: readonly string[];
  /** How often it came up; higher ranks first among equals. */
  recurrence: number;
  /** When it last changed (a turn number or a timestamp: only the order matters); newer first among equals. */
  updated_at: number;
  embedding?: readonly number[];
}

/** Options of {@link rankMemory}. */
export interface RankOptions {
  /** The most tokens ({@link estimateTokens}) the returned items' texts may take together. */
  budgetTokens: number;
  /** The message's embedding, to order by cosine similarity with items that have one. */
  embedding?: { query: readonly number[] };
}

/** Characters per token, for the estimate: a common rule of thumb for English with GPT-style tokenizers. */
const CHARS_PER_TOKEN = 4;

/** A rough token count of a text: its length / 4, rounded up. Cheap and good enough for a budget. */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / CHARS_PER_TOKEN);
}

/**
 * The items most relevant to `message`, best first, cut to the token budget.
 *
 * Order, each key breaking ties of the one before:
 * 1. topic overlap: how many of the message's topics ({@link topicsOf}, computed once) the item has
 *    (item topics are expected unique, as `topicsOf` gives them);
 * 2. cosine similarity of the item's embedding with `options.embedding.query`, when both are given
 *    (an item without one counts as 0);
 * 3. recurrence, higher first;
 * 4. recency (`updated_at`), newer first;
 * 5. input order, so equal items keep a stable, deterministic order.
 *
 * When the message has no topic (empty, or only stop words) or no item shares one, relevance is
 * unknown and the order falls back to recurrence then recency (embeddings ignored, as overlap is):
 * what keeps coming up is the best guess.
 *
 * The budget is filled in that order: an item whose text does not fit in what is left is skipped
 * and smaller ones after it may still fit, so one long episode does not starve the rest. A budget
 * of 0 or less returns nothing. The input is not modified.
 *
 * Cost: one pass over the items for overlap and size, a counting sort by overlap, then, group by
 * group from the highest overlap, a heap that yields items best first only until the budget is
 * full. Cosines are computed only for the groups reached, and nothing is sorted past what is
 * returned: a turn's budget takes a few dozen items out of thousands.
 */
export function rankMemory(items: readonly RankItem[], message: string, options: RankOptions): RankItem[] {
  const count = items.length;
  let left = options.budgetTokens;
  if (count === 0 || !(left > 0)) return [];

  const messageTopics = new Set(topicsOf(message));
  const overlap = new Uint32Array(count);
  const cost = new Float64Array(count);
  const recurrence = new Float64Array(count);
  const updated = new Float64Array(count);
  let maxOverlap = 0;
  let minCost = Number.POSITIVE_INFINITY;
  for (let i = 0; i < count; i++) {
    const item = items[i] as RankItem;
    if (messageTopics.size > 0) {
      const topics = item.topics;
      let shared = 0;
      for (let t = 0; t < topics.length; t++) if (messageTopics.has(topics[t] as string)) shared++;
      overlap[i] = shared;
      if (shared > maxOverlap) maxOverlap = shared;
    }
    const tokens = estimateTokens(item.text);
    cost[i] = tokens;
    if (tokens < minCost) minCost = tokens;
    recurrence[i] = item.recurrence;
    updated[i] = item.updated_at;
  }

  // Items grouped by overlap, highest first, input order kept within a group (counting sort).
  const groupSize = new Uint32Array(maxOverlap + 1);
  for (let i = 0; i < count; i++) {
    const group = overlap[i] as number;
    groupSize[group] = (groupSize[group] as number) + 1;
  }
  const groupStart = new Uint32Array(maxOverlap + 2);
  for (let v = maxOverlap; v >= 0; v--) groupStart[v] = (groupStart[v + 1] ?? 0) + (groupSize[v + 1] ?? 0);
  const order = new Uint32Array(count);
  const cursor = groupStart.slice();
  for (let i = 0; i < count; i++) {
    const group = overlap[i] as number;
    const at = cursor[group] as number;
    order[at] = i;
    cursor[group] = at + 1;
  }

  const query = options.embedding?.query;
  const queryNorm = query ? norm(query) : 0;
  // No overlap anywhere: relevance is unknown, and so is what the embedding would add (see above).
  const similarity = maxOverlap > 0 && query !== undefined && queryNorm > 0 ? new Float64Array(count) : undefined;

  /** Whether item `a` ranks before item `b` within one overlap group: numbers only. */
  const before = (a: number, b: number): boolean => {
    if (similarity) {
      const bySimilarity = (similarity[a] as number) - (similarity[b] as number);
      if (bySimilarity !== 0) return bySimilarity > 0;
    }
    const byRecurrence = (recurrence[a] as number) - (recurrence[b] as number);
    if (byRecurrence !== 0) return byRecurrence > 0;
    const byRecency = (updated[a] as number) - (updated[b] as number);
    if (byRecency !== 0) return byRecency > 0;
    return a < b;
  };

  const ranked: RankItem[] = [];
  for (let v = maxOverlap; v >= 0 && left > 0 && left >= minCost; v--) {
    const size = groupSize[v] as number;
    if (size === 0) continue;
    const start = groupStart[v] as number;
    const heap = order.subarray(start, start + size);
    if (similarity && query) {
      for (let h = 0; h < size; h++) {
        const index = heap[h] as number;
        const embedding = (items[index] as RankItem).embedding;
        if (embedding) similarity[index] = cosineWithNorm(query, queryNorm, embedding);
      }
    }
    for (let h = (size >> 1) - 1; h >= 0; h--) siftDown(heap, h, size, before);
    let remaining = size;
    while (remaining > 0 && left > 0 && left >= minCost) {
      const best = heap[0] as number;
      remaining--;
      heap[0] = heap[remaining] as number;
      siftDown(heap, 0, remaining, before);
      const tokens = cost[best] as number;
      if (tokens > left) continue;
      ranked.push(items[best] as RankItem);
      left -= tokens;
    }
  }
  return ranked;
}

/** Restores the heap property below `at` in `heap[0..size)`: the best item (by `before`) on top. */
function siftDown(heap: Uint32Array, at: number, size: number, before: (a: number, b: number) => boolean): void {
  let parent = at;
  const moving = heap[parent] as number;
  for (;;) {
    let child = 2 * parent + 1;
    if (child >= size) break;
    const right = child + 1;
    if (right < size && before(heap[right] as number, heap[child] as number)) child = right;
    if (!before(heap[child] as number, moving)) break;
    heap[parent] = heap[child] as number;
    parent = child;
  }
  heap[parent] = moving;
}

function norm(vector: readonly number[]): number {
  let sum = 0;
  for (let i = 0; i < vector.length; i++) sum += (vector[i] as number) ** 2;
  return Math.sqrt(sum);
}

/** Cosine with the query's norm computed once; 0 for a zero vector or a different length (see `cosine`). */
function cosineWithNorm(query: readonly number[], queryNorm: number, vector: readonly number[]): number {
  if (vector.length !== query.length) return 0;
  let dot = 0;
  let sum = 0;
  for (let i = 0; i < vector.length; i++) {
    const value = vector[i] as number;
    dot += (query[i] as number) * value;
    sum += value * value;
  }
  return sum === 0 ? 0 : dot / (queryNorm * Math.sqrt(sum));
}
