import { describe, expect, it } from "vitest";
import { jsonSafe } from "../../src/inspect/jsonSafe.ts";

describe("jsonSafe", () => {
  it("copies what JSON cannot hold into something it can, without throwing", () => {
    const cycle: Record<string, unknown> = { name: "loop" };
    cycle.self = cycle;
    const hostile = new Proxy(
      {},
      {
        ownKeys() {
          throw new Error("no keys for you");
        },
      },
    );
    const value = {
      cycle,
      fn: function think() {},
      big: 10n,
      sym: Symbol("s"),
      map: new Map([["a", 1]]),
      set: new Set([1, 2]),
      error: new TypeError("boom"),
      date: new Date(0),
      bytes: new Uint8Array(3),
      nan: Number.NaN,
      missing: undefined,
      actor: { sessionId: "x:3", send: () => {} },
      get broken(): never {
        throw new Error("getter");
      },
      hostile,
    };
    const copy = jsonSafe(value) as Record<string, unknown>;
    expect(JSON.parse(JSON.stringify(copy))).toEqual(copy);
    expect(copy).toMatchObject({
      cycle: { name: "loop", self: "[circular]" },
      fn: "[function think]",
      big: "10",
      sym: "Symbol(s)",
      map: { a: 1 },
      set: [1, 2],
      error: { name: "TypeError", message: "boom" },
      date: "1970-01-01T00:00:00.000Z",
      bytes: "[Uint8Array 3 bytes]",
      nan: "NaN",
      actor: { $actor: "x:3" },
      hostile: "[unreadable]",
    });
    expect("missing" in copy).toBe(false);
  });

  it("bounds depth, breadth, string length and total work", () => {
    let deep: unknown = "bottom";
    for (let i = 0; i < 1_000; i++) deep = { deeper: deep };
    const text10k = "x".repeat(10_000);
    const wide = Array.from({ length: 100_000 }, (_, i) => ({ i, text: text10k }));
    const copy = jsonSafe({ deep, wide, long: "y".repeat(1_000_000) });
    const text = JSON.stringify(copy);
    expect(text.length).toBeLessThan(200_000);
    expect(text).toContain("more");
    expect(text).toContain("chars)");
  });
});
