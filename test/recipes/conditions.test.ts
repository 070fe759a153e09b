/** The condition language and blackboard paths: what a document may say, and that it is never run as code. */
import { describe, expect, it } from "vitest";
import { conditionHolds, evaluateExpression, parseExpression } from "../../src/recipes/expression.ts";
import { readPath, writePath } from "../../src/recipes/paths.ts";

const holds = (source: string, scope: Record<string, unknown>) => conditionHolds(parseExpression(source), scope);

describe("conditions", () => {
  const scope = { result: "success", review: { score: 0.85, tags: ["a", "b"] }, count: 3, draft: "", flag: false };

  it("compares strictly, and orders only numbers with numbers and strings with strings", () => {
    expect(holds("result == 'success'", scope)).toBe(true);
    expect(holds('result == "success"', scope)).toBe(true);
    expect(holds("count == '3'", scope)).toBe(false);
    expect(holds("count != '3'", scope)).toBe(true);
    expect(holds("review.score >= 0.8", scope)).toBe(true);
    expect(holds("review.score < 0.8", scope)).toBe(false);
    expect(holds("result > 3", scope)).toBe(false);
    expect(holds("'b' > 'a'", scope)).toBe(true);
  });

  it("combines with and/or/not (and binding tighter), parentheses, in", () => {
    expect(holds("count == 3 or count == 4 and flag", scope)).toBe(true);
    expect(holds("(count == 3 or count == 4) and flag", scope)).toBe(false);
    expect(holds("not flag && !draft", scope)).toBe(true);
    expect(holds("'a' in review.tags", scope)).toBe(true);
    expect(holds("result in ['failure', 'success']", scope)).toBe(true);
    expect(holds("'succ' in result", scope)).toBe(true);
    expect(holds("'c' in review.tags", scope)).toBe(false);
  });

  it("reads a variable that is not set as undefined, never an error", () => {
    expect(evaluateExpression(parseExpression("missing.deep.path"), scope)).toBeUndefined();
    expect(holds("missing == null", scope)).toBe(false);
    expect(holds("not missing", scope)).toBe(true);
  });

  it("never reaches a prototype", () => {
    expect(evaluateExpression(parseExpression("result.constructor"), scope)).toBeUndefined();
    expect(evaluateExpression(parseExpression("review.__proto__"), scope)).toBeUndefined();
  });

  it("is parsed, never evaluated as code: code is a syntax error naming the column", () => {
    (globalThis as { ran?: boolean }).ran = false;
    expect(() => parseExpression("process.exit(1)")).toThrow(/column 13: expected the end of the condition/);
    expect(() => parseExpression("(globalThis.ran = true)")).toThrow(/column 17: expected an operator/);
    expect((globalThis as { ran?: boolean }).ran).toBe(false);
    expect(() => parseExpression("result ==")).toThrow(/expected a value/);
    expect(() => parseExpression("'open")).toThrow(/closing '/);
    expect(() => parseExpression("")).toThrow(/expected a condition/);
    expect(() => parseExpression("x".repeat(1_001))).toThrow(/at most 1000 characters/);
    expect(() => parseExpression(`${"(".repeat(40)}x${")".repeat(40)}`)).toThrow(/levels of nesting/);
  });
});

describe("blackboard paths", () => {
  it("read dotted paths, array indexes included; a path that does not resolve is not found", () => {
    const root = { data: { rows: [{ n: 1 }, { n: 2 }] } };
    expect(readPath(root, "data.rows.1.n")).toEqual({ found: true, value: 2 });
    expect(readPath(root, "data.columns")).toEqual({ found: false });
    expect(readPath(root, "data.rows.length")).toEqual({ found: true, value: 2 }); // an array's own length
  });

  it("write a copy, creating objects on the way, never changing the original", () => {
    const root = { a: { b: 1 }, list: [1, 2] };
    const written = writePath(writePath(root, "a.c.d", 2), "list.0", 9);
    expect(written).toEqual({ a: { b: 1, c: { d: 2 } }, list: [9, 2] });
    expect(root).toEqual({ a: { b: 1 }, list: [1, 2] });
  });

  it("refuse segments that reach prototypes, and empty ones", () => {
    expect(() => writePath({}, "x.__proto__.polluted", true)).toThrow(/__proto__/);
    expect(() => readPath({}, "constructor.name")).toThrow(/constructor/);
    expect(() => readPath({}, "a..b")).toThrow(/empty segment/);
    expect(({} as { polluted?: boolean }).polluted).toBeUndefined();
  });
});
