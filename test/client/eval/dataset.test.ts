import { describe, expect, it } from "vitest";
import { parseDataset } from "../../../src/client/eval/dataset.ts";
import { isConclaveError } from "../../../src/errors.ts";

/** The one-line message parseDataset refuses `text` with. */
function refusal(text: string): string {
  try {
    parseDataset(text, "cases.jsonl");
  } catch (error) {
    if (!isConclaveError(error, "invalid_request")) throw error;
    expect(error.message).not.toContain("\n");
    return error.message;
  }
  throw new Error("the dataset was accepted");
}

describe("an eval dataset", () => {
  it("reads JSONL, skipping blank and // lines, numbering cases without an id by position", () => {
    const cases = parseDataset('// arithmetic\n{"input": "2+2?", "expected": "4"}\n\n{"id": "hi", "input": "hello"}\n');
    expect(cases).toEqual([
      { id: "1", input: "2+2?", expected: "4", scorers: [{ type: "exact", ignore_case: false }] },
      {
        id: "hi",
        input: "hello",
        scorers: [{ type: "critics", intent: "inform", do_not: [] }],
      },
    ]);
  });

  it("reads a JSON array, with inputs as objects and the scorers' defaults filled in", () => {
    const cases = parseDataset(
      JSON.stringify([
        { input: { topic: "tides" }, scorers: [{ type: "contains", expected: ["moon", "sea"] }] },
        { input: "x", scorers: [{ type: "llm_judge", rubric: "polite" }] },
      ]),
    );
    expect(cases[0]).toEqual({
      id: "1",
      input: { topic: "tides" },
      scorers: [{ type: "contains", expected: ["moon", "sea"], ignore_case: true }],
    });
    expect(cases[1]?.scorers).toEqual([{ type: "llm_judge", rubric: "polite", pass: 0.5 }]);
  });

  it("refuses bad cases in one line naming the line or the case", () => {
    expect(refusal('{"input": "a"}\nnot json\n')).toMatch(/^cases\.jsonl, line 2: not JSON: /);
    expect(refusal('{"input": "a"}\n{"inpt": "a"}\n')).toBe(
      'cases.jsonl, line 2: input: input must be the message (a non-empty string) or the inputs (an object); case: Unrecognized key: "inpt"',
    );
    expect(refusal('[{"input": "a", "scorers": [{"type": "fuzzy"}]}]')).toMatch(
      /^cases\.jsonl: case 1: scorers\.0\.type: /,
    );
    expect(refusal('[{"input": "a", "scorers": [{"type": "critics", "critics": ["nice"]}]}]')).toBe(
      "cases.jsonl: case 1: scorers.0: no critic 'nice'; the critics are: safety, do_not, coherence, length",
    );
    expect(
      refusal(
        '[{"input": "a", "scorers": [{"type": "json_schema", "schema": {"type": "string", "pattern": "(a+)+\\\\1"}}]}]',
      ),
    ).toMatch(/^cases\.jsonl: case 1: scorers\.0: schema is not a usable JSON Schema: /);
    expect(refusal('{"id": "a b", "input": "x"}')).toContain("line 1: id: id must be 1-40 characters");
    expect(refusal('{"id": "a", "input": "x"}\n{"id": "a", "input": "y"}')).toBe(
      "cases.jsonl: two cases have the id 'a'",
    );
    expect(refusal("\n// nothing\n")).toBe("cases.jsonl: no cases (JSONL, one case a line, or a JSON array)");
    expect(refusal('{"cases": []}')).toMatch(/^cases\.jsonl, line 1: /);
    expect(refusal("[1,")).toMatch(/^cases\.jsonl: not a JSON array of cases: /);
  });
});
