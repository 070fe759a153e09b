import { describe, expect, it } from "vitest";
import { compareReports, parseReport } from "../../../src/client/eval/compare.ts";
import { isConclaveError } from "../../../src/errors.ts";

const report = (run_id: string, cases: [string, number][]) => ({
  run_id,
  score: cases.reduce((sum, [, score]) => sum + score, 0) / cases.length,
  cases: cases.map(([id, score]) => ({ id, score, passed: score === 1 })),
});

describe("comparing two eval runs", () => {
  it("says per case what got better, worse, stayed, came or went, and the aggregate's change", () => {
    const before = report("a", [
      ["one", 1],
      ["two", 0.5],
      ["three", 1],
      ["gone", 0],
    ]);
    const after = report("b", [
      ["one", 1],
      ["two", 1],
      ["three", 0],
      ["new", 1],
    ]);
    expect(compareReports(before, after)).toEqual({
      before_run: "a",
      after_run: "b",
      before_score: 0.625,
      after_score: 0.75,
      delta: 0.125,
      cases: [
        { id: "one", before: 1, after: 1, delta: 0, change: "same" },
        { id: "two", before: 0.5, after: 1, delta: 0.5, change: "better" },
        { id: "three", before: 1, after: 0, delta: -1, change: "worse" },
        { id: "new", after: 1, change: "new" },
        { id: "gone", before: 0, change: "gone" },
      ],
    });
  });

  it("refuses, in one line, JSON that is no report", () => {
    expect(parseReport(report("a", [["one", 1]]), "r.json").run_id).toBe("a");
    try {
      parseReport({ cases: "none" }, "r.json");
      throw new Error("accepted");
    } catch (error) {
      expect(isConclaveError(error, "invalid_request")).toBe(true);
      expect((error as Error).message).toMatch(/^r\.json is not an eval report: /);
    }
  });
});
