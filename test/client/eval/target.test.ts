import { describe, expect, it } from "vitest";
import { agentRecipe, caseInputs, replyText, valueAt } from "../../../src/client/eval/target.ts";
import { loadRecipe } from "../../../src/recipes/load.ts";

describe("an eval's target", () => {
  it("asks an agent through a one-step recipe the loader accepts, offering it the tools given", () => {
    const plain = loadRecipe(agentRecipe("acme.math", ["message"]));
    expect(plain.nodes).toMatchObject([{ kind: "agent", id: "answer", agent: "acme.math", output_key: "answer" }]);
    const withTools = loadRecipe(agentRecipe("app.echo", ["message"], ["count_words"]));
    expect(withTools.nodes).toMatchObject([{ kind: "agent", agent: "app.echo", tools: ["count_words"] }]);
  });

  it("gives a message under the input key, and an object as the inputs", () => {
    expect(caseInputs("2+2?", "question")).toEqual({ question: "2+2?" });
    expect(caseInputs({ topic: "tides" }, "message")).toEqual({ topic: "tides" });
  });

  it("takes the reply from a string, a `reply`, the say proposals, else the JSON", () => {
    expect(replyText("four")).toBe("four");
    expect(replyText({ reply: "four", proposals: [{ kind: "say", text: "no" }] })).toBe("four");
    expect(
      replyText({
        words: 3,
        proposals: [
          { kind: "ask", text: "?" },
          { kind: "say", text: "One." },
          { kind: "say", text: "Two." },
        ],
      }),
    ).toBe("One. Two.");
    expect(replyText({ result: 4 })).toBe('{"result":4}');
    expect(replyText(undefined)).toBe("null");
  });

  it("reads a dotted path of the blackboard", () => {
    expect(valueAt({ review: { score: 3 } }, "review.score")).toBe(3);
    expect(valueAt({ review: { score: 3 } }, "review.missing")).toBeUndefined();
    expect(valueAt({ review: "x" }, "review.length")).toBeUndefined();
  });
});
