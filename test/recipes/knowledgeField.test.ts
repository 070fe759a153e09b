/**
 * A recipe's `knowledge:` (docs/knowledge.md): collections named on a graph agent node, a
 * workflow step or its agent definition reach the node; a bad collection name is refused with
 * its path.
 */
import { describe, expect, it } from "vitest";
import { loadRecipe, RecipeValidationError } from "../../src/recipes/load.ts";
import type { AgentNode } from "../../src/recipes/recipe.ts";

const workflow = (definition: Record<string, unknown>, step: Record<string, unknown> = {}) => ({
  apiVersion: "coreason.ai/v2",
  kind: "Recipe",
  metadata: { name: "kb" },
  definitions: { reader: { type: "agent", id: "acme.reader", ...definition } },
  workflow: { start: "answer", steps: { answer: { type: "agent", agent: "reader", ...step } } },
});

const graph = (node: Record<string, unknown>) => ({
  apiVersion: "coreason.ai/v2",
  kind: "Recipe",
  metadata: { name: "kb", version: "1.0.0" },
  interface: { inputs: {}, outputs: {} },
  topology: {
    entry_point: "answer",
    nodes: [{ type: "agent", id: "answer", agent_ref: "acme.reader", ...node }],
    edges: [],
  },
});

const knowledgeOf = (document: unknown) =>
  (loadRecipe(document).nodes.find((node) => node.id === "answer") as AgentNode).knowledge;

describe("a recipe's knowledge", () => {
  it("reaches the node from a workflow step, else from its agent definition", () => {
    expect(knowledgeOf(workflow({ knowledge: ["handbook", "handbook"] }))).toEqual(["handbook"]);
    expect(knowledgeOf(workflow({ knowledge: ["handbook"] }, { knowledge: ["runbooks"] }))).toEqual(["runbooks"]);
    expect(knowledgeOf(workflow({}))).toBeUndefined();
  });

  it("reaches the node from a graph agent node", () => {
    expect(knowledgeOf(graph({ knowledge: ["handbook"] }))).toEqual(["handbook"]);
  });

  it("refuses a bad collection name, naming where it is", () => {
    const refused = (() => {
      try {
        loadRecipe(workflow({ knowledge: ["no spaces"] }));
      } catch (error) {
        return error;
      }
    })();
    expect(refused).toBeInstanceOf(RecipeValidationError);
    const issue = (refused as RecipeValidationError).issues[0];
    expect(issue?.path).toBe("definitions.reader.knowledge[0]");
    expect(issue?.message).toContain("a collection name is 1-64 characters");
  });
});
