/**
 * The condition language of switch cases and edges (src/recipes/expression.ts):
 * every operator, precedence, strictness, unset variables, the limits, and
 * that a condition is parsed into data and walked, never run as code.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import {
  conditionHolds,
  evaluateExpression,
  MAX_EXPRESSION_LENGTH,
  parseExpression,
  RecipeExpressionError,
} from "../../src/recipes/expression.ts";

const scope = {
  result: "success",
  count: 3,
  zero: 0,
  empty: "",
  flag: false,
  nothing: null,
  tags: ["a", "b"],
  pairs: [
    [1, 2],
    [3, 4],
  ],
  review: { score: 0.85, verdict: { ok: true } },
  text: "hello world",
};

const value = (source: string, over: unknown = scope) => evaluateExpression(parseExpression(source), over);
const holds = (source: string, over: unknown = scope) => conditionHolds(parseExpression(source), over);

/** The error a source raises when parsed (fails the test when it parses). */
function parseError(source: string): RecipeExpressionError {
  try {
    parseExpression(source);
  } catch (error) {
    expect(error).toBeInstanceOf(RecipeExpressionError);
    return error as RecipeExpressionError;
  }
  throw new Error(`'${source}' parsed`);
}

describe("operators", () => {
  it("== and != compare strictly, deeply, without coercion", () => {
    expect(value("result == 'success'")).toBe(true);
    expect(value('result == "success"')).toBe(true);
    expect(value("result != 'success'")).toBe(false);
    expect(value("count == 3")).toBe(true);
    expect(value("1 == '1'")).toBe(false);
    expect(value("1 != '1'")).toBe(true);
    expect(value("count == '3'")).toBe(false);
    expect(value("zero == false")).toBe(false);
    expect(value("empty == false")).toBe(false);
    expect(value("nothing == null")).toBe(true);
    expect(value("true == 'true'")).toBe(false);
    expect(value("tags == ['a', 'b']")).toBe(true);
    expect(value("tags == ['b', 'a']")).toBe(false);
    expect(value("review.verdict.ok == true")).toBe(true);
    expect(value("1.5 == 1.50")).toBe(true);
    expect(value("-2 == -2")).toBe(true);
  });

  it("< <= > >= order numbers with numbers and strings with strings, nothing else", () => {
    expect(value("count < 4")).toBe(true);
    expect(value("count < 3")).toBe(false);
    expect(value("count <= 3")).toBe(true);
    expect(value("count > 2")).toBe(true);
    expect(value("count > 3")).toBe(false);
    expect(value("count >= 3")).toBe(true);
    expect(value("review.score >= 0.8")).toBe(true);
    expect(value("count > -1")).toBe(true);
    expect(value("'b' > 'a'")).toBe(true);
    expect(value("'abc' <= 'abd'")).toBe(true);
    // Strings order as strings, not as the numbers they spell.
    expect(value("'10' < '9'")).toBe(true);
    // Mixed types never order, either way round.
    expect(value("'10' > 2")).toBe(false);
    expect(value("'10' <= 2")).toBe(false);
    expect(value("count > '1'")).toBe(false);
    expect(value("count < '9'")).toBe(false);
    expect(value("nothing < 1")).toBe(false);
    expect(value("nothing >= 0")).toBe(false);
    expect(value("true > false")).toBe(false);
    expect(value("missing < 1")).toBe(false);
    expect(value("missing >= 1")).toBe(false);
    expect(value("tags > tags")).toBe(false);
  });

  it("in: an item of a list (deeply, strictly), or a substring of a string", () => {
    expect(value("'a' in tags")).toBe(true);
    expect(value("'c' in tags")).toBe(false);
    expect(value("result in ['failure', 'success']")).toBe(true);
    expect(value("count in [1, 2, 3]")).toBe(true);
    expect(value("count in ['3']")).toBe(false);
    expect(value("[3, 4] in pairs")).toBe(true);
    expect(value("[4, 3] in pairs")).toBe(false);
    expect(value("'lo wo' in text")).toBe(true);
    expect(value("'bye' in text")).toBe(false);
    expect(value("'' in text")).toBe(true);
    // A number is not a substring; a non-list, non-string holds nothing.
    expect(value("1 in '123'")).toBe(false);
    expect(value("'a' in count")).toBe(false);
    expect(value("'a' in missing")).toBe(false);
    expect(value("'a' in review")).toBe(false);
    expect(value("x in []")).toBe(false);
  });

  it("and/&&, or/||, not/! over truthiness; the result is a boolean", () => {
    expect(value("true and true")).toBe(true);
    expect(value("true && false")).toBe(false);
    expect(value("false or true")).toBe(true);
    expect(value("false || false")).toBe(false);
    expect(value("not flag")).toBe(true);
    expect(value("!flag")).toBe(true);
    expect(value("!!flag")).toBe(false);
    expect(value("not not count")).toBe(true);
    // Falsy: false, null, unset, 0, '' and the empty list; anything else is truthy.
    for (const falsy of ["flag", "nothing", "missing", "zero", "empty", "[]"]) expect(holds(falsy)).toBe(false);
    for (const truthy of ["count", "result", "tags", "review", "[0]", "-1", "'0'"]) expect(holds(truthy)).toBe(true);
    expect(value("count and result")).toBe(true);
    expect(value("zero or empty")).toBe(false);
  });

  it("a lone value evaluates to itself", () => {
    expect(value("count")).toBe(3);
    expect(value("'x'")).toBe("x");
    expect(value("null")).toBeNull();
    expect(value("[1, 'a', true, null, [2]]")).toEqual([1, "a", true, null, [2]]);
    expect(value("review.score")).toBe(0.85);
  });
});

describe("precedence and grouping", () => {
  it("and binds tighter than or", () => {
    expect(value("true or false and false")).toBe(true);
    expect(value("false and false or true")).toBe(true);
    expect(value("count == 3 or count == 4 and flag")).toBe(true);
    expect(parseExpression("a or b and c")).toEqual({
      op: "or",
      args: [
        { op: "var", path: "a" },
        {
          op: "and",
          args: [
            { op: "var", path: "b" },
            { op: "var", path: "c" },
          ],
        },
      ],
    });
  });

  it("parentheses override it", () => {
    expect(value("(true or false) and false")).toBe(false);
    expect(value("(count == 3 or count == 4) and flag")).toBe(false);
    expect(value("((count == 3))")).toBe(true);
    expect(value("not (flag or count == 3)")).toBe(false);
  });

  it("not binds to a comparison, and comparisons bind tighter than and/or", () => {
    // not count == 4 is not (count == 4)
    expect(value("not count == 4")).toBe(true);
    expect(parseExpression("not a == 1")).toEqual({
      op: "not",
      arg: { op: "==", left: { op: "var", path: "a" }, right: { op: "lit", value: 1 } },
    });
    expect(value("count == 3 and result == 'success'")).toBe(true);
    expect(value("! flag && count > 2 || false")).toBe(true);
  });

  it("chains of one operator flatten into one node", () => {
    expect(parseExpression("a and b && c")).toEqual({
      op: "and",
      args: [
        { op: "var", path: "a" },
        { op: "var", path: "b" },
        { op: "var", path: "c" },
      ],
    });
  });
});

describe("variables", () => {
  it("read dotted paths (array indexes included); one that is not set is undefined, never an error", () => {
    expect(value("tags.1")).toBe("b");
    expect(value("pairs.1.0")).toBe(3);
    expect(value("missing")).toBeUndefined();
    expect(value("missing.deep.path")).toBeUndefined();
    expect(value("count.digits")).toBeUndefined();
    expect(value("missing == null")).toBe(false);
    expect(value("missing != null")).toBe(true);
    expect(value("not missing")).toBe(true);
    expect(value("x", null)).toBeUndefined();
    expect(value("x", "a string scope")).toBeUndefined();
  });

  it("constructor, __proto__ and prototype never reach a prototype; own properties only", () => {
    for (const source of [
      "constructor",
      "result.constructor",
      "review.__proto__",
      "__proto__.polluted",
      "tags.constructor.name",
      "review.constructor.prototype",
      "count.toString",
      "review.hasOwnProperty",
      "text.length",
    ])
      expect(value(source), source).toBeUndefined();
    expect(value("review.constructor == null")).toBe(false);
    expect(holds("constructor")).toBe(false);
    // An own key spelled __proto__ (JSON.parse makes one) is refused all the same.
    const own = JSON.parse('{"__proto__": {"x": 1}}') as unknown;
    expect(value("__proto__.x", own)).toBeUndefined();
    // An array's own length is data.
    expect(value("tags.length")).toBe(2);
  });
});

describe("strings", () => {
  it("either quote; a backslash escapes the next character", () => {
    expect(value("'it\\'s'")).toBe("it's");
    expect(value('"say \\"hi\\""')).toBe('say "hi"');
    expect(value("'a\\\\b'")).toBe("a\\b");
    expect(value('"it\'s"')).toBe("it's");
    expect(value("'say \"hi\"'")).toBe('say "hi"');
    // No escape sequences beyond that: \n is the letter n.
    expect(value("'a\\nb'")).toBe("anb");
    expect(value("'a and b' == 'a and b'")).toBe(true);
    expect(value("'' == empty")).toBe(true);
  });
});

describe("syntax errors name the column and what was expected", () => {
  it.each([
    ["result ==", 10, "a value"],
    ["result == == 'x'", 11, "a value, not '=='"],
    ["(count == 3", 12, "')'"],
    ["count == 3)", 11, "the end of the condition"],
    ["count = 3", 7, "an operator, a name, a number or a string"],
    ["'open", 1, "a closing '"],
    ['x == "open', 6, 'a closing "'],
    ["and == 1", 1, "a value, not 'and'"],
    ["x in", 5, "a value"],
    ["[1, 2", 6, "']'"],
    ["a b", 3, "the end of the condition"],
    ["", 1, "a condition"],
    ["   ", 1, "a condition"],
    ["count $ 3", 7, "an operator, a name, a number or a string"],
  ])("%j: column %d, expected %s", (source, column, expected) => {
    const error = parseError(source);
    expect(error.message).toContain(`at column ${column}: expected ${expected}`);
    expect(error.code).toBe("invalid_recipe");
  });
});

describe("limits", () => {
  it(`refuses a condition longer than ${MAX_EXPRESSION_LENGTH} characters`, () => {
    const longest = `'${"x".repeat(MAX_EXPRESSION_LENGTH - 2)}'`;
    expect(longest).toHaveLength(MAX_EXPRESSION_LENGTH);
    expect(value(longest)).toHaveLength(MAX_EXPRESSION_LENGTH - 2);
    expect(parseError(`${longest} `).message).toMatch(/at most 1000 characters/);
    expect(parseError("a or ".repeat(300)).message).toMatch(/at most 1000 characters/);
  });

  it("refuses nesting deeper than 32 levels", () => {
    const nested = (depth: number) => `${"(".repeat(depth)}x${")".repeat(depth)}`;
    expect(value(nested(32), { x: 1 })).toBe(1);
    expect(parseError(nested(33)).message).toMatch(/at most 32 levels of nesting/);
    expect(parseError(nested(200)).message).toMatch(/at most 32 levels of nesting/);
    // not counts as a level too
    expect(parseError(`${"not (".repeat(20)}x${")".repeat(20)}`).message).toMatch(/levels of nesting/);
    // Lists and not count as levels on their own too.
    expect(value(`${"[".repeat(32)}1${"]".repeat(32)}`)).toEqual([
      [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]],
    ]);
    expect(parseError(`${"[".repeat(33)}1${"]".repeat(33)}`).message).toMatch(/at most 32 levels of nesting/);
    expect(parseError(`${"[".repeat(400)}${"]".repeat(400)}`).message).toMatch(/at most 32 levels of nesting/);
    expect(value(`${"!".repeat(32)}x`, { x: 1 })).toBe(true);
    expect(parseError(`${"!".repeat(33)}x`).message).toMatch(/at most 32 levels of nesting/);
  });
});

describe("nothing is evaluated as code", () => {
  afterEach(() => {
    vi.restoreAllMocks();
    delete (globalThis as { x?: unknown }).x;
  });

  it("a call is a syntax error, and nothing is called", () => {
    const exit = vi.spyOn(process, "exit").mockImplementation((() => {
      throw new Error("process.exit was called");
    }) as never);
    expect(parseError("process.exit(1)").message).toContain("at column 13: expected the end of the condition");
    expect(exit).not.toHaveBeenCalled();
  });

  it.each([
    "globalThis.x = 1",
    "(globalThis.x = 1)",
    "constructor.constructor('globalThis.x = 1')()",
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a template literal is what is tried here
    "`${globalThis.x = 1}`",
    "x; globalThis.x = 1",
    "eval('globalThis.x = 1')",
    "Function('globalThis.x = 1')()",
    "require('fs')",
    "import('fs')",
    "x => 1",
    "a + 1",
    "a ? b : c",
  ])("%s does not parse, and sets nothing", (source) => {
    expect(() => parseExpression(source)).toThrow(RecipeExpressionError);
    expect((globalThis as { x?: unknown }).x).toBeUndefined();
  });

  it("a parsed condition is plain JSON data", () => {
    const tree = parseExpression("a.b >= 2 and not (c in ['x', \"y\"]) || d != null");
    expect(JSON.parse(JSON.stringify(tree))).toEqual(tree);
    // Names that mean something in JavaScript are plain variables here.
    expect(parseExpression("process")).toEqual({ op: "var", path: "process" });
    expect(value("process.env", { process: { env: "data" } })).toBe("data");
    expect(value("globalThis")).toBeUndefined();
  });
});
