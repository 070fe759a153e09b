import { describe, expect, it } from "vitest";
import { DEFAULT_PARTITIONS, fnv1a, partitionOf } from "../../src/contracts/partitions.ts";
import { assignPartitions, partitionsOf } from "../../src/runtime/runner/partitionAssignment.ts";

const runners = (n: number) => Array.from({ length: n }, (_, i) => `host-${i}:${4100 + 7 * i}`);

describe("a session's partition", () => {
  it("is FNV-1a of its id modulo the count: the documented hash, the same in every process", () => {
    // FNV-1a 32-bit reference values (the empty string is the offset basis).
    expect(fnv1a("")).toBe(0x811c9dc5);
    expect(fnv1a("a")).toBe(0xe40c292c);
    expect(fnv1a("foobar")).toBe(0xbf9cf968);
    expect(partitionOf("foobar", 16)).toBe(0xbf9cf968 % 16);
  });

  it("spreads sessions evenly", () => {
    const counts = new Array<number>(DEFAULT_PARTITIONS).fill(0);
    for (let i = 0; i < 1_600; i++) counts[partitionOf(`chat-${i}`, DEFAULT_PARTITIONS)]! += 1;
    expect(Math.min(...counts)).toBeGreaterThan(60);
    expect(Math.max(...counts)).toBeLessThan(140);
  });
});

describe("partition ownership", () => {
  it("gives every partition exactly one owner, loads differing by one at most", () => {
    for (const count of [1, 2, 3, 4, 5, 7, 16, 20]) {
      const owned = assignPartitions(runners(count), 16);
      const all = [...owned.values()].flat().sort((a, b) => a - b);
      expect(all).toEqual(Array.from({ length: 16 }, (_, i) => i));
      const loads = [...owned.values()].map((partitions) => partitions.length);
      expect(Math.max(...loads) - Math.min(...loads), `${count} runners: ${loads}`).toBeLessThanOrEqual(1);
    }
  });

  it("is the same whatever order the runners are seen in", () => {
    const seen = runners(4);
    const reversed = [...seen].reverse();
    expect(assignPartitions(reversed, 16)).toEqual(assignPartitions(seen, 16));
    expect(partitionsOf(seen[2]!, reversed, 16)).toEqual(partitionsOf(seen[2]!, seen, 16));
  });

  it("keeps most partitions where they were when a runner joins", () => {
    for (const count of [1, 2, 3, 4, 5, 6, 7]) {
      const before = assignPartitions(runners(count), 16);
      const after = assignPartitions(runners(count + 1), 16);
      let moved = 0;
      for (const [runner, partitions] of before)
        for (const partition of partitions) if (!after.get(runner)!.includes(partition)) moved += 1;
      const share = Math.floor(16 / (count + 1));
      expect(moved, `${count} → ${count + 1} runners`).toBeGreaterThanOrEqual(share);
      expect(moved, `${count} → ${count + 1} runners`).toBeLessThanOrEqual(16 / 2 + share);
    }
  });

  it("gives a runner that is not among the live ones nothing", () => {
    expect(partitionsOf("gone:1", runners(3), 16).size).toBe(0);
  });
});
