import type { ScheduleCondition, SchedulePredicate } from "./intent.ts";

/** The facts of one fired run a convergence condition is checked against. */
export interface RunFacts {
  outcome: { status: string } & Record<string, unknown>;
  blackboard: Record<string, unknown>;
  response: string;
  turn_id: number;
  fires: number;
}

const TESTS = ["eq", "ne", "exists", "gt", "gte", "lt", "lte"] as const;

function valueAt(facts: RunFacts, path: string): unknown {
  let value: unknown = facts;
  for (const key of path.split(".")) {
    if (value === null || typeof value !== "object" || !Object.hasOwn(value, key)) return undefined;
    value = (value as Record<string, unknown>)[key];
  }
  return value;
}

/** Deep equality of JSON values (what a predicate's `eq` compares). */
function sameJson(left: unknown, right: unknown): boolean {
  return JSON.stringify(left) === JSON.stringify(right);
}

/** Whether one predicate holds of the facts. A number test of a value that is no number fails. */
export function predicateHolds(predicate: SchedulePredicate, facts: RunFacts): boolean {
  const value = valueAt(facts, predicate.path);
  const test = TESTS.find((name) => name in predicate);
  switch (test) {
    case "eq":
      return sameJson(value, predicate.eq);
    case "ne":
      return !sameJson(value, predicate.ne);
    case "exists":
      return (value !== undefined) === predicate.exists;
    default: {
      if (typeof value !== "number" || test === undefined) return false;
      const bound = predicate[test] as number;
      return test === "gt"
        ? value > bound
        : test === "gte"
          ? value >= bound
          : test === "lt"
            ? value < bound
            : value <= bound;
    }
  }
}

/** Whether a convergence condition (`all_of` / `any_of`, nested) holds of the facts. */
export function conditionHolds(condition: ScheduleCondition, facts: RunFacts): boolean {
  const holds = (part: SchedulePredicate | ScheduleCondition) =>
    "path" in part
      ? predicateHolds(part as SchedulePredicate, facts)
      : conditionHolds(part as ScheduleCondition, facts);
  return "all_of" in condition ? condition.all_of.every(holds) : condition.any_of.some(holds);
}
