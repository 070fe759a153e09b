import { describe, expect, it } from "vitest";
import { conditionHolds, predicateHolds, type RunFacts } from "../../src/schedules/convergence.ts";
import { IntentSpec, ScheduleCondition, SchedulePredicate } from "../../src/schedules/intent.ts";

const facts: RunFacts = {
  outcome: { status: "Complete" },
  blackboard: { score: 0.92, draft: { text: "hello" }, tags: ["a"] },
  response: "done",
  turn_id: 4,
  fires: 3,
};

describe("convergence predicates", () => {
  it("test one fact each: eq, ne, exists, and number bounds", () => {
    expect(predicateHolds({ path: "outcome.status", eq: "Complete" }, facts)).toBe(true);
    expect(predicateHolds({ path: "outcome.status", ne: "Failed" }, facts)).toBe(true);
    expect(predicateHolds({ path: "blackboard.draft.text", exists: true }, facts)).toBe(true);
    expect(predicateHolds({ path: "blackboard.missing", exists: false }, facts)).toBe(true);
    expect(predicateHolds({ path: "blackboard.tags", eq: ["a"] }, facts)).toBe(true);
    expect(predicateHolds({ path: "blackboard.score", gte: 0.9 }, facts)).toBe(true);
    expect(predicateHolds({ path: "blackboard.score", lt: 0.9 }, facts)).toBe(false);
    expect(predicateHolds({ path: "fires", gt: 3 }, facts)).toBe(false);
    expect(predicateHolds({ path: "turn_id", lte: 4 }, facts)).toBe(true);
    // A number bound on what is no number fails rather than throwing.
    expect(predicateHolds({ path: "blackboard.draft", gte: 1 }, facts)).toBe(false);
  });

  it("combine with all_of and any_of, nested", () => {
    const condition = ScheduleCondition.parse({
      all_of: [
        { path: "outcome.status", eq: "Complete" },
        {
          any_of: [
            { path: "blackboard.score", gte: 0.95 },
            { path: "fires", gte: 3 },
          ],
        },
      ],
    });
    expect(conditionHolds(condition, facts)).toBe(true);
    expect(conditionHolds(condition, { ...facts, fires: 1 })).toBe(false);
    expect(conditionHolds({ any_of: [{ path: "outcome.status", eq: "Failed" }] }, facts)).toBe(false);
  });

  it("refuse a predicate with no test, two tests, or an unknown root", () => {
    expect(SchedulePredicate.safeParse({ path: "outcome.status" }).success).toBe(false);
    expect(SchedulePredicate.safeParse({ path: "fires", gte: 1, lte: 3 }).success).toBe(false);
    expect(SchedulePredicate.safeParse({ path: "process.env", exists: true }).success).toBe(false);
    expect(ScheduleCondition.safeParse({ all_of: [] }).success).toBe(false);
  });

  it("belong to an intent, whose catch-up limit defaults to 1", () => {
    const intent = IntentSpec.parse({
      id: "nightly",
      session_id: "s1",
      what: { text: "summarise the day" },
      when: { cron: "0 22 * * *", tz: "Europe/Paris" },
      convergence: { any_of: [{ path: "outcome.status", eq: "Complete" }] },
    });
    expect(intent.catch_up_max).toBe(1);
    expect(IntentSpec.safeParse({ ...intent, id: "bad id" }).success).toBe(false);
  });
});
