/** The offline knowledge embedder (src/knowledge/embedder.ts): every word of a chunk, hashed. */
import { describe, expect, it } from "vitest";
import { knowledgeOfflineEmbedder, knowledgeOfflineEmbedding } from "../../src/knowledge/embedder.ts";

describe("the offline knowledge embedder", () => {
  it("is deterministic, of unit length, and names its size", async () => {
    const embedder = knowledgeOfflineEmbedder(128);
    expect(embedder.id).toBe("offline-terms:128");
    const [a, b] = await embedder.embed(["Rotate the NATS credentials", "Rotate the NATS credentials"]);
    expect(a).toEqual(b);
    expect(Math.hypot(...(a as number[]))).toBeCloseTo(1, 6);
    expect(knowledgeOfflineEmbedding("the of and", 128).every((x) => x === 0)).toBe(true);
  });

  it("keeps every word of a long text: a word past the twelfth topic still matches", () => {
    const long =
      "alpha bravo charlie delta echo foxtrot golf hotel india juliett kilo lima mike november oscar papa quebec zeppelin";
    const cosine = (a: number[], b: number[]) => a.reduce((sum, x, i) => sum + x * (b[i] as number), 0);
    const withWord = cosine(knowledgeOfflineEmbedding(long), knowledgeOfflineEmbedding("zeppelin"));
    const without = cosine(knowledgeOfflineEmbedding(long), knowledgeOfflineEmbedding("submarine"));
    expect(withWord).toBeGreaterThan(0.1);
    expect(without).toBeLessThan(withWord);
  });
});
