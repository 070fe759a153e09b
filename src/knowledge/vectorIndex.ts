/**
 * The knowledge workers' in-memory vector index: exact cosine search over one flat Float32Array per
 * collection (vectors scaled to length 1 when added, so a score is one dot product). Chosen by
 * measurement over PostgreSQL 15 without pgvector (docs/knowledge.md, "The index"): at 10,000
 * chunks an exact scan is a few milliseconds, well under the 20 ms target, and exact means no recall
 * is lost to an approximation. Built from the store (KV) when a worker starts and kept current by
 * following it.
 */

/** What a hit points back to: the key of the chunk it was added under. */
export interface IndexHit {
  key: string;
  score: number;
}

/** One collection's vectors: rows of a growable matrix, removed by moving the last row into the gap. */
class Space {
  readonly keys: string[] = [];
  readonly rows = new Map<string, number>();
  data: Float32Array;
  constructor(readonly dims: number) {
    this.data = new Float32Array(dims * 64);
  }

  set(key: string, vector: Float32Array): void {
    let row = this.rows.get(key);
    if (row === undefined) {
      row = this.keys.length;
      if ((row + 1) * this.dims > this.data.length) {
        const grown = new Float32Array(this.data.length * 2);
        grown.set(this.data);
        this.data = grown;
      }
      this.keys.push(key);
      this.rows.set(key, row);
    }
    this.data.set(vector, row * this.dims);
  }

  delete(key: string): boolean {
    const row = this.rows.get(key);
    if (row === undefined) return false;
    const last = this.keys.length - 1;
    if (row !== last) {
      const moved = this.keys[last] as string;
      this.data.copyWithin(row * this.dims, last * this.dims, (last + 1) * this.dims);
      this.keys[row] = moved;
      this.rows.set(moved, row);
    }
    this.keys.pop();
    this.rows.delete(key);
    return true;
  }

  /** The `limit` best rows for a unit `query`, best first. */
  search(query: Float32Array, limit: number, minScore: number): IndexHit[] {
    const dims = this.dims;
    const data = this.data;
    // The best so far, worst first (a sorted array: limit is small).
    const best: IndexHit[] = [];
    // A sparse query (the offline embedder's: a few words in hundreds of dimensions) is scored on
    // its non-zero dimensions only: the same sum, a fraction of the work.
    const nonZero = sparseDims(query);
    for (let row = 0; row < this.keys.length; row++) {
      let dot = 0;
      const base = row * dims;
      if (nonZero)
        for (let k = 0; k < nonZero.length; k++) {
          const i = nonZero[k] as number;
          dot += (data[base + i] as number) * (query[i] as number);
        }
      else for (let i = 0; i < dims; i++) dot += (data[base + i] as number) * (query[i] as number);
      if (dot < minScore || (best.length === limit && dot <= (best[0] as IndexHit).score)) continue;
      const hit = { key: this.keys[row] as string, score: dot };
      let at = 0;
      while (at < best.length && (best[at] as IndexHit).score < dot) at++;
      best.splice(at, 0, hit);
      if (best.length > limit) best.shift();
    }
    return best.reverse();
  }
}

/** The indices of `vector`'s non-zero values, ascending, when they are at most a quarter of it; else null. */
function sparseDims(vector: Float32Array): Int32Array | null {
  const limit = vector.length / 4;
  const found: number[] = [];
  for (let i = 0; i < vector.length; i++) {
    if (vector[i] === 0) continue;
    if (found.length >= limit) return null;
    found.push(i);
  }
  return Int32Array.from(found);
}

/** Vectors by collection (any string naming one: the owner, collection and embedder together). */
export class VectorIndex {
  readonly #spaces = new Map<string, Space>();

  /** How many vectors it holds, in all collections. */
  get size(): number {
    let size = 0;
    for (const space of this.#spaces.values()) size += space.keys.length;
    return size;
  }

  /** Adds (or replaces) `key`'s vector in `space`; a vector of another size than the space's is refused. */
  set(space: string, key: string, vector: Float32Array | readonly number[]): void {
    const unit = normalized(vector);
    let found = this.#spaces.get(space);
    if (!found) {
      found = new Space(unit.length);
      this.#spaces.set(space, found);
    }
    if (unit.length !== found.dims)
      throw new RangeError(`vector of ${unit.length} dimensions in a space of ${found.dims}`);
    found.set(key, unit);
  }

  /** Removes `key` from `space`; false when it was not there. */
  delete(space: string, key: string): boolean {
    const found = this.#spaces.get(space);
    if (!found?.delete(key)) return false;
    if (found.keys.length === 0) this.#spaces.delete(space);
    return true;
  }

  /** The `limit` closest vectors of `space` to `query` by cosine similarity, best first; none for a space it does not hold. */
  search(space: string, query: Float32Array | readonly number[], limit: number, minScore = -1): IndexHit[] {
    const found = this.#spaces.get(space);
    if (!found || limit < 1) return [];
    const unit = normalized(query);
    if (unit.length !== found.dims) return [];
    return found.search(unit, limit, minScore);
  }
}

/** The vector scaled to length 1, as a Float32Array (all zeros stays all zeros). */
export function normalized(vector: Float32Array | readonly number[]): Float32Array {
  const out = Float32Array.from(vector);
  let norm = 0;
  for (const value of out) norm += value * value;
  norm = Math.sqrt(norm);
  if (norm > 0) for (let i = 0; i < out.length; i++) out[i] = (out[i] as number) / norm;
  return out;
}

/** A vector as stored: its float32 bytes, little-endian, in base64. */
export function encodeVector(vector: readonly number[] | Float32Array): string {
  const floats = Float32Array.from(vector);
  const bytes = new Uint8Array(floats.length * 4);
  const view = new DataView(bytes.buffer);
  for (let i = 0; i < floats.length; i++) view.setFloat32(i * 4, floats[i] as number, true);
  return Buffer.from(bytes).toString("base64");
}

/** A stored vector read back ({@link encodeVector}'s inverse); null when it is not whole float32s. */
export function decodeVector(encoded: string): Float32Array | null {
  const bytes = Buffer.from(encoded, "base64");
  if (bytes.length === 0 || bytes.length % 4 !== 0) return null;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.length);
  const out = new Float32Array(bytes.length / 4);
  for (let i = 0; i < out.length; i++) out[i] = view.getFloat32(i * 4, true);
  return out.every(Number.isFinite) ? out : null;
}
