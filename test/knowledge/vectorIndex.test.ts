/**
 * The knowledge workers' vector index: exact cosine top-k; a sparse query (few non-zero
 * dimensions) is scored on those only, and must rank as the full scan does.
 */
import { describe, expect, it } from "vitest";
import { VectorIndex } from "../../src/knowledge/vectorIndex.ts";

/** A deterministic pseudo-random vector: dense, or with `nonZero` non-zero values. */
function vector(seed: number, dims: number, nonZero = dims): number[] {
  let state = seed * 2654435761 + 1;
  const next = () => {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    return state / 2 ** 32;
  };
  const out = new Array<number>(dims).fill(0);
  for (let k = 0; k < nonZero; k++) out[Math.floor(next() * dims)] = next() * 2 - 1;
  return out;
}

/** The exact top `limit` by cosine, computed the plain way. */
function bruteForce(rows: number[][], query: number[], limit: number): { key: string; score: number }[] {
  const norm = (v: number[]) => Math.hypot(...v) || 1;
  const dot = (row: number[]) => row.reduce((sum, x, d) => sum + x * (query[d] as number), 0);
  return rows
    .map((row, i) => ({ key: `r${i}`, score: dot(row) / (norm(row) * norm(query)) }))
    .sort((a, b) => b.score - a.score)
    .slice(0, limit);
}

/** The index's hits against the plain top: the same keys in order, the same scores (float32). */
function expectSameRanking(hits: { key: string; score: number }[], expected: { key: string; score: number }[]): void {
  expect(hits.map((hit) => hit.key)).toEqual(expected.map((hit) => hit.key));
  for (const [i, hit] of hits.entries()) expect(hit.score).toBeCloseTo(expected[i]?.score as number, 5);
}

describe("VectorIndex.search", () => {
  const dims = 64;
  const rows = Array.from({ length: 300 }, (_, i) => vector(i, dims));
  const index = new VectorIndex();
  for (const [i, row] of rows.entries()) index.set("s", `r${i}`, row);

  it("a dense query ranks as the full cosine does", () => {
    const query = vector(1_000, dims);
    expectSameRanking(index.search("s", query, 5), bruteForce(rows, query, 5));
  });

  it("a sparse query (a few non-zero dimensions) ranks as the full cosine does, and scores", () => {
    for (const seed of [2_000, 2_001, 2_002]) {
      const query = vector(seed, dims, 3);
      expectSameRanking(index.search("s", query, 5), bruteForce(rows, query, 5));
    }
  });

  it("an all-zero query scores every row 0", () => {
    expect(index.search("s", new Array(dims).fill(0), 3).every((hit) => hit.score === 0)).toBe(true);
  });
});
