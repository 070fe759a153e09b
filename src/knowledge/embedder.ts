import type { LlmConfig } from "../llm/config.ts";
import { createEmbedder, type Embedder, embeddingConfigFromEnv } from "../llm/embeddings.ts";
import { fnv1a } from "../memory/learn/embedder.ts";
import { topicOfWord, wordsOf } from "../memory/learn/topics.ts";

/**
 * The offline knowledge embedder's size: wider than memory's 64, as a chunk holds many more words
 * than a message, and every one of them is hashed (at 256, a docs chunk's terms collided enough to
 * cost recall: bench/knowledgeQuality.ts).
 */
export const KNOWLEDGE_OFFLINE_DIMS = 512;

/** The least time an indexing call to an embedding model gets: a batch of chunks is slower than one query. */
export const KNOWLEDGE_INDEXING_TIMEOUT_MS = 60_000;

/**
 * The offline embedding of a text for knowledge: every word's topic tag (lowercased, stop words
 * out, stemmed, the offline tagger's few synonyms; `topicOfWord`), each adding 1 + ln(its count)
 * with a hashed sign at a hashed index (FNV-1a), the vector scaled to length 1 (all zeros for a
 * text without a content word).
 *
 * Like memory's offline embedder it is NOT semantic: a query matches the chunks that share its
 * words. Unlike it, it keeps every word of a long chunk (memory's keeps a message's 12 most frequent
 * topics) and weighs repeated ones sublinearly, which is what lets a question find its section
 * among hundreds of chunks.
 */
export function knowledgeOfflineEmbedding(text: string, dims: number = KNOWLEDGE_OFFLINE_DIMS): number[] {
  if (!Number.isInteger(dims) || dims < 1) throw new RangeError(`dims must be a positive integer, got ${dims}`);
  const counts = new Map<string, number>();
  for (const word of wordsOf(text)) {
    const term = topicOfWord(word);
    if (term !== undefined) counts.set(term, (counts.get(term) ?? 0) + 1);
  }
  const vector = new Array<number>(dims).fill(0);
  for (const [term, count] of counts) {
    const hash = fnv1a(term);
    // The sign from a bit the index does not use, so colliding terms cancel as often as they add.
    const weight = (1 + Math.log(count)) * ((hash >>> 31) & 1 ? -1 : 1);
    vector[hash % dims] = (vector[hash % dims] as number) + weight;
  }
  const norm = Math.hypot(...vector);
  return norm === 0 ? vector : vector.map((value) => value / norm);
}

/** The offline knowledge embedder ({@link knowledgeOfflineEmbedding}), id `offline-terms:<dims>`. */
export function knowledgeOfflineEmbedder(dims: number = KNOWLEDGE_OFFLINE_DIMS): Embedder {
  if (!Number.isInteger(dims) || dims < 1) throw new RangeError(`dims must be a positive integer, got ${dims}`);
  return {
    id: `offline-terms:${dims}`,
    model: "offline",
    embed: async (texts, signal) => {
      signal?.throwIfAborted();
      return texts.map((text) => knowledgeOfflineEmbedding(text, dims));
    },
  };
}

/**
 * The embedders of the knowledge service: the configured embedding model (`CONCLAVE_EMBEDDING_MODEL`
 * on the LLM's server, through the `openai` client), else the offline knowledge embedder
 * ({@link knowledgeOfflineEmbedder}, {@link KNOWLEDGE_OFFLINE_DIMS} dimensions). `indexing` embeds
 * chunks being added, with a deadline of at least {@link KNOWLEDGE_INDEXING_TIMEOUT_MS}; `query`
 * embeds searches, with the configured one. Both make vectors of one id, so what one indexed the
 * other searches.
 */
export function knowledgeEmbedders(
  env: NodeJS.ProcessEnv = process.env,
  llm?: LlmConfig | null,
): { indexing: Embedder; query: Embedder } {
  const config = embeddingConfigFromEnv(env, llm);
  if (config?.kind === "openai") {
    const indexing = createEmbedder({
      ...config,
      timeoutMs: Math.max(config.timeoutMs, KNOWLEDGE_INDEXING_TIMEOUT_MS),
    }) as Embedder;
    return { indexing, query: createEmbedder(config) as Embedder };
  }
  const offline = knowledgeOfflineEmbedder();
  return { indexing: offline, query: offline };
}
