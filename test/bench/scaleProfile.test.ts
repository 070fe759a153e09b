/** How `BENCH_SCALE_PROFILE=1` splits one kind of process's CPU per turn by its profiles (bench/scaleProfile.ts). */
import { describe, expect, it } from "vitest";
import { splitByShare } from "../../bench/scaleProfile.ts";

describe("the scale bench's profile summary", () => {
  it("adds up each function over the processes and splits the CPU per turn by their shares of the busy samples", () => {
    const entries = [
      { name: "publish nats-core", ms: 30, share: 0.3 },
      { name: "parse zod", ms: 10, share: 0.1 },
      { name: "publish nats-core", ms: 50, share: 0.5 },
      { name: "(garbage collector)", ms: 20, share: 0.2 },
    ];
    // 200 ms busy in all, 40 ms of CPU a turn: publish had 80/200 of the samples, so 16 ms a turn.
    expect(splitByShare(entries, 200, 40)).toEqual([
      { name: "publish nats-core", ms: 16, share: 0.4 },
      { name: "(garbage collector)", ms: 4, share: 0.1 },
      { name: "parse zod", ms: 2, share: 0.05 },
    ]);
  });

  it("keeps at most twelve entries, and splits nothing when nothing was sampled", () => {
    const entries = Array.from({ length: 20 }, (_, i) => ({ name: `f${i}`, ms: i + 1, share: 0 }));
    const top = splitByShare(entries, 0, 30);
    expect(top).toHaveLength(12);
    expect(top[0]).toEqual({ name: "f19", ms: 0, share: 0 });
  });
});
