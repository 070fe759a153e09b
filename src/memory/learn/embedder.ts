import { topicsOf } from "./topics.ts";

/** Dimensions of {@link offlineEmbedding} unless asked otherwise: small, since it only hashes a dozen topics. */
export const OFFLINE_EMBEDDING_DIMS = 64;

/**
 * The offline embedder: a deterministic hashed bag of the text's topics ({@link topicsOf}), each
 * topic adding ±1 at a hashed index, the vector scaled to length 1 (all zeros for a text with no
 * topic).
 *
 * It is NOT semantic: two texts are close only when they share topic tags (or when two tags
 * collide in the hash). It exists so that code paths that rank by embeddings run, and are tested,
 * without an embedding model; a real embedder replaces it without changing the callers.
 */
export function offlineEmbedding(text: string, dims: number = OFFLINE_EMBEDDING_DIMS): number[] {
  if (!Number.isInteger(dims) || dims < 1) throw new RangeError(`dims must be a positive integer, got ${dims}`);
  const vector = new Array<number>(dims).fill(0);
  for (const topic of topicsOf(text)) {
    const hash = fnv1a(topic);
    // The sign from a bit the index does not use, so colliding topics cancel as often as they add.
    vector[hash % dims] = (vector[hash % dims] ?? 0) + ((hash >>> 31) & 1 ? -1 : 1);
  }
  const norm = Math.hypot(...vector);
  return norm === 0 ? vector : vector.map((value) => value / norm);
}

/**
 * The cosine similarity of two vectors, in [-1, 1]. 0 when either is all zeros or when their
 * lengths differ: vectors of different sizes come from different embedders and say nothing about
 * each other, and a ranking must not fail on one odd item.
 */
export function cosine(a: readonly number[], b: readonly number[]): number {
  if (a.length !== b.length || a.length === 0) return 0;
  let dot = 0;
  let normA = 0;
  let normB = 0;
  for (let i = 0; i < a.length; i++) {
    const x = a[i] as number;
    const y = b[i] as number;
    dot += x * y;
    normA += x * x;
    normB += y * y;
  }
  if (normA === 0 || normB === 0) return 0;
  return dot / Math.sqrt(normA * normB);
}

/** 32-bit FNV-1a of a string's UTF-16 code units: tiny, stable across runs and platforms. */
export function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}
