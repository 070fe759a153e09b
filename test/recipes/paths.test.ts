/** Blackboard paths (src/recipes/paths.ts): reading, writing copies, and the segments a document may not name. */
import { describe, expect, it } from "vitest";
import { pathSegments, readPath, writePath } from "../../src/recipes/paths.ts";

/** Freezes a value all the way down, so that any write to it throws. */
function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null) {
    for (const child of Object.values(value)) deepFreeze(child);
    Object.freeze(value);
  }
  return value;
}

describe("pathSegments", () => {
  it("splits on dots", () => {
    expect(pathSegments("a")).toEqual(["a"]);
    expect(pathSegments("data.rows.0.name")).toEqual(["data", "rows", "0", "name"]);
  });

  it.each(["", ".", "a.", ".a", "a..b"])("refuses the empty segment in %j", (path) => {
    expect(() => pathSegments(path)).toThrow(TypeError);
    expect(() => pathSegments(path)).toThrow(/empty segment/);
  });

  it.each(["__proto__", "constructor", "prototype", "a.__proto__", "a.constructor.b", "a.b.prototype"])(
    "refuses %j",
    (path) => {
      expect(() => pathSegments(path)).toThrow(TypeError);
      expect(() => pathSegments(path)).toThrow(/may not use '(__proto__|constructor|prototype)'/);
    },
  );

  it("allows names that merely contain a forbidden word", () => {
    expect(pathSegments("my_constructor.prototypes.__proto__x")).toEqual([
      "my_constructor",
      "prototypes",
      "__proto__x",
    ]);
  });
});

describe("readPath", () => {
  const root = {
    data: { row_count: 3, rows: [{ n: 1 }, { n: 2 }], empty: null, zero: 0, nothing: undefined },
    text: "abc",
  };

  it("reads nested objects and arrays by index", () => {
    expect(readPath(root, "data.row_count")).toEqual({ found: true, value: 3 });
    expect(readPath(root, "data.rows.1.n")).toEqual({ found: true, value: 2 });
    expect(readPath(root, "data.rows.0")).toEqual({ found: true, value: { n: 1 } });
    expect(readPath(root, "data")).toEqual({ found: true, value: root.data });
    expect(readPath([10, 20], "1")).toEqual({ found: true, value: 20 });
  });

  it("finds falsy values; an own property holding undefined is found", () => {
    expect(readPath(root, "data.empty")).toEqual({ found: true, value: null });
    expect(readPath(root, "data.zero")).toEqual({ found: true, value: 0 });
    expect(readPath(root, "data.nothing")).toEqual({ found: true, value: undefined });
  });

  it("a path that does not resolve is not found", () => {
    expect(readPath(root, "missing")).toEqual({ found: false });
    expect(readPath(root, "data.rows.2")).toEqual({ found: false });
    expect(readPath(root, "data.rows.2.n")).toEqual({ found: false });
    expect(readPath(root, "data.empty.x")).toEqual({ found: false });
    expect(readPath(root, "data.row_count.x")).toEqual({ found: false });
    expect(readPath(root, "text.0")).toEqual({ found: false });
    expect(readPath(root, "text.length")).toEqual({ found: false });
    expect(readPath(null, "a")).toEqual({ found: false });
    expect(readPath(undefined, "a")).toEqual({ found: false });
    expect(readPath(42, "a")).toEqual({ found: false });
  });

  it("reads own properties only, never inherited ones", () => {
    expect(readPath({}, "toString")).toEqual({ found: false });
    expect(readPath({}, "hasOwnProperty")).toEqual({ found: false });
    expect(readPath(Object.create({ inherited: 1 }), "inherited")).toEqual({ found: false });
    expect(readPath([1, 2], "map")).toEqual({ found: false });
    // An array's length is its own.
    expect(readPath([1, 2], "length")).toEqual({ found: true, value: 2 });
  });

  it("throws on a forbidden or empty segment, even where the data has one", () => {
    const own = JSON.parse('{"__proto__": {"x": 1}, "a": {"constructor": 2}}') as unknown;
    expect(() => readPath(own, "__proto__.x")).toThrow(/__proto__/);
    expect(() => readPath(own, "a.constructor")).toThrow(/constructor/);
    expect(() => readPath({}, "constructor.prototype")).toThrow(TypeError);
    expect(() => readPath({ a: { "": 1 } }, "a.")).toThrow(/empty segment/);
  });
});

describe("writePath", () => {
  it("writes at the top level and nested, creating objects on the way", () => {
    expect(writePath({}, "a", 1)).toEqual({ a: 1 });
    expect(writePath({ keep: true }, "a.b.c", 1)).toEqual({ keep: true, a: { b: { c: 1 } } });
    expect(writePath({ a: { b: 1, c: 2 } }, "a.b", 9)).toEqual({ a: { b: 9, c: 2 } });
    expect(writePath({ a: 1 }, "a", { nested: [1] })).toEqual({ a: { nested: [1] } });
    expect(writePath({ a: 1 }, "a", undefined)).toEqual({ a: undefined });
  });

  it("replaces a value that is not an object with one on the way", () => {
    expect(writePath({ a: 1 }, "a.b", 2)).toEqual({ a: { b: 2 } });
    expect(writePath({ a: null }, "a.b", 2)).toEqual({ a: { b: 2 } });
    expect(writePath({ a: "text" }, "a.b", 2)).toEqual({ a: { b: 2 } });
  });

  it("writes into arrays by index, as arrays", () => {
    const written = writePath({ list: [1, 2, 3] }, "list.1", 9);
    expect(written).toEqual({ list: [1, 9, 3] });
    expect(Array.isArray(written.list)).toBe(true);
    expect(writePath({ rows: [{ n: 1 }, { n: 2 }] }, "rows.1.n", 5)).toEqual({ rows: [{ n: 1 }, { n: 5 }] });
    expect(writePath({ rows: [{ n: 1 }] }, "rows.0.m", 5)).toEqual({ rows: [{ n: 1, m: 5 }] });
    // At the end: the array grows by one; past it, nothing is written (a sparse array would be unbounded).
    expect(writePath({ list: [1] }, "list.1", 3).list).toEqual([1, 3]);
    expect(() => writePath({ list: [1] }, "list.2", 3)).toThrow(/past the end/);
    // A numeric segment over an object is a key.
    expect(writePath({ a: {} }, "a.0", "x")).toEqual({ a: { "0": "x" } });
  });

  it("never changes its input: it returns a copy along the path and shares the rest", () => {
    const root = deepFreeze({ a: { b: 1, list: [1, 2] }, other: { deep: { x: 1 } } });
    const before = structuredClone(root);
    const written = writePath(writePath(writePath(root, "a.b", 2), "a.list.0", 9), "a.c.d", 3);
    expect(root).toEqual(before);
    expect(written).toEqual({ a: { b: 2, list: [9, 2], c: { d: 3 } }, other: { deep: { x: 1 } } });
    expect(written).not.toBe(root);
    expect(written.a).not.toBe(root.a);
    expect((written.a as { list: unknown }).list).not.toBe(root.a.list);
    // What the path does not touch is shared, not copied.
    expect(written.other).toBe(root.other);
  });

  it.each([
    "__proto__",
    "__proto__.polluted",
    "x.__proto__.polluted",
    "constructor.prototype.polluted",
    "x.constructor",
    "list.prototype",
    "a..b",
    "",
  ])("throws on %j and pollutes nothing", (path) => {
    const root = { x: {}, list: [] as unknown[] };
    expect(() => writePath(root, path, true)).toThrow(TypeError);
    expect(({} as { polluted?: unknown }).polluted).toBeUndefined();
    expect(Object.prototype).not.toHaveProperty("polluted");
    expect(root).toEqual({ x: {}, list: [] });
  });
});
