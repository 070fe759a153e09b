/** A judge's verdict (src/recipes/score.ts): scores on any common scale brought to 0–1, with the critique. */
import { describe, expect, it } from "vitest";
import { verdictOf } from "../../src/recipes/score.ts";

/** The normalized score of an answer (fails the test when there is none). */
const scoreOf = (answer: unknown): number => {
  const verdict = verdictOf(answer);
  expect(verdict, JSON.stringify(answer)).not.toBeNull();
  return verdict!.score;
};

describe("object answers", () => {
  it.each<[unknown, number]>([
    [{ score: 0.8 }, 0.8],
    [{ score: 0 }, 0],
    [{ score: 1 }, 1],
    [{ score: 8 }, 0.8],
    [{ score: 10 }, 1],
    [{ score: 85 }, 0.85],
    [{ score: 100 }, 1],
    [{ score: "0.7" }, 0.7],
    [{ score: "8/10" }, 0.8],
    [{ score: "85%" }, 0.85],
    [{ rating: 0.6 }, 0.6],
    [{ rating: 9 }, 0.9],
    [{ grade: 90 }, 0.9],
    [{ score: null, rating: 0.5 }, 0.5],
  ])("%j scores %d", (answer, expected) => {
    expect(scoreOf(answer)).toBeCloseTo(expected, 10);
  });

  it("score wins over rating, rating over grade", () => {
    expect(scoreOf({ score: 0.1, rating: 0.2, grade: 0.3 })).toBe(0.1);
    expect(scoreOf({ rating: 0.2, grade: 0.3 })).toBe(0.2);
  });

  it("the critique is the first string of critique, feedback, reason, rationale, comment, explanation", () => {
    for (const key of ["critique", "feedback", "reason", "rationale", "comment", "explanation"])
      expect(verdictOf({ score: 0.5, [key]: `by ${key}` })).toEqual({ score: 0.5, critique: `by ${key}` });
    expect(verdictOf({ score: 0.5, explanation: "e", critique: "c", feedback: "f" })?.critique).toBe("c");
    expect(verdictOf({ score: 0.5, feedback: "f", reason: "r" })?.critique).toBe("f");
    // A critique that is not a string is passed over.
    expect(verdictOf({ score: 0.5, critique: { text: "x" }, reason: "r" })?.critique).toBe("r");
    expect(verdictOf({ score: 0.5, critique: 3 })).toEqual({ score: 0.5, critique: "" });
    expect(verdictOf({ score: 0.5 })).toEqual({ score: 0.5, critique: "" });
  });

  it.each<unknown>([
    {},
    { critique: "no score at all" },
    { score: -0.5 },
    { score: 150 },
    { score: Number.NaN },
    { score: Number.POSITIVE_INFINITY },
    { score: true },
    { score: "great" },
    { score: { value: 0.8 } },
    { score: "11/10" },
    [0.9],
  ])("%j has no verdict", (answer) => {
    expect(verdictOf(answer)).toBeNull();
  });
});

describe("text answers", () => {
  it.each<[string, number]>([
    ["Score: 7/10", 0.7],
    ["Score: 7/10. Needs a clearer intro.", 0.7],
    ["score 7 / 10", 0.7],
    ["I give it 3/5", 0.6],
    ["10/10", 1],
    ["0/10, start again", 0],
    ["85%", 0.85],
    ["About 85 % there", 0.85],
    ["100%", 1],
    ["0.9", 0.9],
    ["  0.9\n", 0.9],
    ["8", 0.8],
    ["85", 0.85],
    ["Score: 9. Two sections are thin.", 0.9],
    ["The draft has 3 issues. Score = 0.4", 0.4],
    ["I would rate it 6 overall", 0.6],
  ])("%j scores %d", (text, expected) => {
    expect(scoreOf(text)).toBeCloseTo(expected, 10);
  });

  it("the critique is the whole answer, trimmed", () => {
    expect(verdictOf("  Score: 7/10. Needs a clearer intro.\n")).toEqual({
      score: 0.7,
      critique: "Score: 7/10. Needs a clearer intro.",
    });
  });

  it.each<string>(["", "excellent work", "no score here", "11/10", "120%", "score: 250", "-5%", "score: -1"])(
    "%j has no verdict",
    (text) => {
      expect(verdictOf(text)).toBeNull();
    },
  );
});

describe("other answers", () => {
  it("a bare number is a score on the same scales", () => {
    expect(verdictOf(0.5)).toEqual({ score: 0.5, critique: "" });
    expect(scoreOf(7)).toBeCloseTo(0.7, 10);
    expect(scoreOf(85)).toBeCloseTo(0.85, 10);
    expect(verdictOf(101)).toBeNull();
    expect(verdictOf(-1)).toBeNull();
    expect(verdictOf(Number.NaN)).toBeNull();
  });

  it.each<unknown>([null, undefined, true, false])("%j has no verdict", (answer) => {
    expect(verdictOf(answer)).toBeNull();
  });
});
