/** Pre-flight constraints (src/recipes/constraints.ts): every operator, unresolved paths, type mismatches, optional ones. */
import { describe, expect, it } from "vitest";
import { checkConstraints } from "../../src/recipes/constraints.ts";
import type { Constraint, ConstraintOperator } from "../../src/recipes/recipe.ts";

const scope = {
  data: { row_count: 3, name: "orders", tags: ["a", "b"], rows: [{ id: 1 }], config: { mode: "fast" } },
  flag: true,
  nothing: null,
  empty: "",
};

const constraint = (
  variable: string,
  operator: ConstraintOperator,
  value: unknown,
  extra: Partial<Constraint> = {},
): Constraint => ({ variable, operator, value, required: true, ...extra });

/** True when the single constraint holds over the scope. */
const passes = (variable: string, operator: ConstraintOperator, value: unknown, over: unknown = scope) => {
  const checked = checkConstraints([constraint(variable, operator, value)], over);
  expect(checked.warnings).toEqual([]);
  return checked.failed.length === 0;
};

describe("each operator, passing and failing", () => {
  it.each<[string, ConstraintOperator, unknown, boolean]>([
    ["data.row_count", "eq", 3, true],
    ["data.row_count", "eq", 4, false],
    ["data.row_count", "eq", "3", false],
    ["data.name", "eq", "orders", true],
    ["data.tags", "eq", ["a", "b"], true],
    ["data.tags", "eq", ["b", "a"], false],
    ["data.config", "eq", { mode: "fast" }, true],
    ["nothing", "eq", null, true],
    ["flag", "eq", 1, false],
    ["data.row_count", "neq", 0, true],
    ["data.row_count", "neq", 3, false],
    ["data.row_count", "neq", "3", true],
    ["empty", "neq", "", false],
    ["data.row_count", "gt", 2, true],
    ["data.row_count", "gt", 3, false],
    ["data.row_count", "gte", 3, true],
    ["data.row_count", "gte", 4, false],
    ["data.row_count", "lt", 4, true],
    ["data.row_count", "lt", 3, false],
    ["data.row_count", "lte", 3, true],
    ["data.row_count", "lte", 2, false],
    ["data.name", "gt", "alpha", true],
    ["data.name", "lt", "alpha", false],
    ["data.name", "gte", "orders", true],
    ["data.name", "lte", "order", false],
    ["data.name", "in", ["orders", "users"], true],
    ["data.name", "in", ["users"], false],
    ["data.row_count", "in", [1, 2, 3], true],
    ["data.row_count", "in", ["3"], false],
    ["data.config", "in", [{ mode: "fast" }], true],
    ["data.name", "in", "orders,users", true],
    ["data.name", "in", "users", false],
    ["data.tags", "contains", "a", true],
    ["data.tags", "contains", "c", false],
    ["data.rows", "contains", { id: 1 }, true],
    ["data.rows", "contains", { id: 2 }, false],
    ["data.name", "contains", "der", true],
    ["data.name", "contains", "xyz", false],
  ])("%s %s %j: %s", (variable, operator, value, expected) => {
    expect(passes(variable, operator, value)).toBe(expected);
  });
});

describe("type mismatches fail, and never throw", () => {
  it.each<[string, ConstraintOperator, unknown]>([
    ["data.row_count", "gt", "2"],
    ["data.name", "gt", 2],
    ["nothing", "lt", 1],
    ["flag", "gte", false],
    ["data.tags", "lte", ["z"]],
    ["data.config", "gt", {}],
    ["data.row_count", "in", 3],
    ["data.row_count", "in", "123"],
    ["data.name", "in", { orders: true }],
    ["data.row_count", "contains", 3],
    ["data.name", "contains", 1],
    ["data.config", "contains", "mode"],
    ["nothing", "contains", null],
  ])("%s %s %j fails", (variable, operator, value) => {
    expect(passes(variable, operator, value)).toBe(false);
  });
});

describe("paths", () => {
  it("a path that does not resolve fails, whatever the operator", () => {
    for (const operator of ["eq", "neq", "gt", "gte", "lt", "lte", "in", "contains"] as const) {
      const { failed } = checkConstraints([constraint("data.missing", operator, 1)], scope);
      expect(failed).toHaveLength(1);
      expect(failed[0]!.message).toBe("data.missing is not set");
    }
    // neq undefined would hold if an unresolved path were read as a value: it is not.
    expect(passes("missing", "neq", "anything")).toBe(false);
    expect(passes("data.rows.1.id", "eq", 1)).toBe(false);
    expect(passes("data.rows.0.id", "eq", 1)).toBe(true);
    expect(passes("x", "eq", 1, null)).toBe(false);
  });

  it("a forbidden path fails the constraint, naming why, without throwing", () => {
    const { failed } = checkConstraints([constraint("data.__proto__.x", "eq", 1)], scope);
    expect(failed).toHaveLength(1);
    expect(failed[0]!.message).toMatch(/^data\.__proto__\.x: path .* may not use '__proto__'/);
  });
});

describe("results", () => {
  it("says what did not hold, with the value it found", () => {
    const { failed, warnings } = checkConstraints([constraint("data.row_count", "gt", 5)], scope);
    expect(warnings).toEqual([]);
    expect(failed).toEqual([
      { constraint: constraint("data.row_count", "gt", 5), message: "data.row_count (3) is not gt 5" },
    ]);
  });

  it("shortens long values in the message", () => {
    const long = { text: "x".repeat(200) };
    const { failed } = checkConstraints([constraint("long", "eq", 1)], { long });
    expect(failed[0]!.message).toMatch(/^long \(\{"text":"x+\.\.\.\) is not eq 1$/);
    expect(failed[0]!.message.length).toBeLessThan(120);
  });

  it("uses error_message when the constraint has one", () => {
    const { failed } = checkConstraints(
      [
        constraint("data.row_count", "gt", 10, { error_message: "too few rows" }),
        constraint("missing", "eq", 1, { error_message: "missing is required" }),
      ],
      scope,
    );
    expect(failed.map((result) => result.message)).toEqual(["too few rows", "missing is required"]);
  });

  it("an optional constraint that fails is a warning; a required one a failure", () => {
    const optional = constraint("data.row_count", "gt", 10, { required: false, error_message: "few rows" });
    const required = constraint("data.name", "eq", "users", { required: true });
    const optionalMissing = constraint("missing", "eq", 1, { required: false });
    const { failed, warnings } = checkConstraints([optional, required, optionalMissing], scope);
    expect(failed).toEqual([{ constraint: required, message: 'data.name ("orders") is not eq "users"' }]);
    expect(warnings).toEqual([
      { constraint: optional, message: "few rows" },
      { constraint: optionalMissing, message: "missing is not set" },
    ]);
  });

  it("collects every failure, in order; none holds nothing back", () => {
    const constraints = [
      constraint("data.row_count", "gte", 1),
      constraint("data.row_count", "lt", 1),
      constraint("data.name", "in", ["orders"]),
      constraint("data.tags", "contains", "z"),
    ];
    const { failed } = checkConstraints(constraints, scope);
    expect(failed.map((result) => result.constraint)).toEqual([constraints[1], constraints[3]]);
    expect(checkConstraints([], scope)).toEqual({ failed: [], warnings: [] });
    expect(checkConstraints([constraint("data.row_count", "eq", 3)], scope)).toEqual({ failed: [], warnings: [] });
  });
});
