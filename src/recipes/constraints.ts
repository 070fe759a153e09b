import { isDeepStrictEqual } from "node:util";
import { readPath } from "./paths.ts";
import type { Constraint } from "./recipe.ts";

/** A constraint that did not hold, and why. */
export interface ConstraintResult {
  constraint: Constraint;
  message: string;
}

const show = (value: unknown): string => {
  const text = JSON.stringify(value);
  return text === undefined ? String(value) : text.length > 80 ? `${text.slice(0, 77)}...` : text;
};

/** True when the operator holds; a type mismatch (`gt` of a string and a number) does not hold. */
function holds(operator: Constraint["operator"], actual: unknown, expected: unknown): boolean {
  switch (operator) {
    case "eq":
      return isDeepStrictEqual(actual, expected);
    case "neq":
      return !isDeepStrictEqual(actual, expected);
    case "gt":
    case "gte":
    case "lt":
    case "lte": {
      const comparable =
        (typeof actual === "number" && typeof expected === "number") ||
        (typeof actual === "string" && typeof expected === "string");
      if (!comparable) return false;
      const a = actual as number | string;
      const b = expected as number | string;
      return operator === "gt" ? a > b : operator === "gte" ? a >= b : operator === "lt" ? a < b : a <= b;
    }
    case "in":
      // The variable's value is one of `value` (a list), or a part of it (a string).
      if (Array.isArray(expected)) return expected.some((item) => isDeepStrictEqual(item, actual));
      return typeof expected === "string" && typeof actual === "string" && expected.includes(actual);
    case "contains":
      // `value` is one of the variable's value (a list), or a part of it (a string).
      if (Array.isArray(actual)) return actual.some((item) => isDeepStrictEqual(item, expected));
      return typeof actual === "string" && typeof expected === "string" && actual.includes(expected);
  }
}

/**
 * The pre-flight check (RECIPES.md, `requirements`): each constraint's
 * variable is read from `scope` by its dotted path and compared with the
 * operator. A path that does not resolve fails; a type mismatch fails
 * rather than erroring. Required constraints that fail are `failed` (the
 * run must not start); optional ones are `warnings`.
 */
export function checkConstraints(
  constraints: readonly Constraint[],
  scope: unknown,
): { failed: ConstraintResult[]; warnings: ConstraintResult[] } {
  const failed: ConstraintResult[] = [];
  const warnings: ConstraintResult[] = [];
  for (const constraint of constraints) {
    let message: string | null = null;
    let resolved: { found: boolean; value?: unknown };
    try {
      resolved = readPath(scope, constraint.variable);
    } catch (error) {
      resolved = { found: false };
      message = `${constraint.variable}: ${(error as Error).message}`;
    }
    if (!resolved.found) message ??= `${constraint.variable} is not set`;
    else if (!holds(constraint.operator, resolved.value, constraint.value))
      message = `${constraint.variable} (${show(resolved.value)}) is not ${constraint.operator} ${show(constraint.value)}`;
    if (message === null) continue;
    const result = { constraint, message: constraint.error_message ?? message };
    (constraint.required ? failed : warnings).push(result);
  }
  return { failed, warnings };
}
