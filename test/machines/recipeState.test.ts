/**
 * A recipe's `state` (StateDefinition) enforced on the blackboard: a write
 * of a declared variable whose value its JSON Schema refuses is not made,
 * and the run fails naming the variable, in graph recipes and workflow
 * manifests alike; undeclared variables take any value.
 */
import { describe, expect, it } from "vitest";
import { loadRecipe, RecipeValidationError } from "../../src/recipes/load.ts";
import type { Recipe } from "../../src/recipes/recipe.ts";
import { kindsOf, recordsOf, runRecipe } from "../helpers/recipeMachine.ts";

const HEADER = { apiVersion: "coreason.ai/v2", kind: "Recipe", metadata: { name: "test" } } as const;

const graph = (properties: Record<string, unknown>, outputKey = "count"): Recipe =>
  loadRecipe({
    ...HEADER,
    state: { properties },
    topology: [
      { type: "agent", id: "counter", agent_ref: "a.counter", output_key: outputKey },
      { type: "agent", id: "after", agent_ref: "a.after" },
    ],
  });

const workflow = (dataSchema: Record<string, unknown>): Recipe =>
  loadRecipe({
    ...HEADER,
    state: { data_schema: dataSchema },
    workflow: {
      start: "judge",
      steps: {
        judge: { type: "agent", agent: "a.judge", output_key: "verdict", next: "after" },
        after: { type: "agent", agent: "a.after" },
      },
    },
  });

describe("state enforced on the blackboard", () => {
  it("graph: a write breaking the variable's declared type is refused, naming the variable", async () => {
    const { output, calls, records } = await runRecipe(graph({ count: { type: "number" } }), {
      agents: { "a.counter": () => "three", "a.after": () => "ran" },
    });
    expect(calls.map((call) => call.node)).toEqual(["counter"]);
    expect(output.outcome).toMatchObject({ status: "Failed", error: { code: "invalid_state" } });
    const message = (output.outcome as { error: { message: string } }).error.message;
    expect(message).toMatch(/^node 'counter': blackboard variable 'count' breaks the recipe's state: count: /);
    expect(message).not.toContain("\n");
    // Refused: the value never reached the blackboard.
    expect(output.blackboard).not.toHaveProperty("count");
    expect(recordsOf(records, "NODE_FAILED")).toEqual([
      expect.objectContaining({ node: "counter", code: "invalid_state", retrying: false }),
    ]);
    expect(kindsOf(records)).not.toContain("NODE_COMPLETED");
  });

  it("graph: a write that matches, and writes of undeclared variables, stand", async () => {
    const { output } = await runRecipe(graph({ count: { type: "number" } }), {
      agents: { "a.counter": () => 3, "a.after": () => ({ anything: true }) },
    });
    expect(output.outcome).toEqual({ status: "Complete" });
    expect(output.blackboard).toEqual({ count: 3, after: { anything: true } });
  });

  it("graph: a write at a dotted path is checked as the whole variable it changes", async () => {
    const recipe = graph(
      { report: { type: "object", properties: { title: { type: "string" } }, required: ["title"] } },
      "report.title",
    );
    const { output } = await runRecipe(recipe, { agents: { "a.counter": () => 7, "a.after": () => "ran" } });
    expect(output.outcome).toMatchObject({ status: "Failed", error: { code: "invalid_state" } });
    expect((output.outcome as { error: { message: string } }).error.message).toContain(
      "blackboard variable 'report' (written at 'report.title')",
    );
  });

  it("workflow: data_schema (as variables, or as an object schema) is enforced the same way", async () => {
    for (const dataSchema of [
      { verdict: { type: "string" } },
      { type: "object", properties: { verdict: { type: "string" } } },
    ]) {
      const { output, calls } = await runRecipe(workflow(dataSchema), {
        agents: { "a.judge": () => 42, "a.after": () => "ran" },
      });
      expect(calls.map((call) => call.node)).toEqual(["judge"]);
      expect(output.outcome).toMatchObject({ status: "Failed", error: { code: "invalid_state" } });
      expect((output.outcome as { error: { message: string } }).error.message).toContain("'verdict'");
    }
    const { output } = await runRecipe(workflow({ verdict: { type: "string" } }), {
      agents: { "a.judge": () => "fine", "a.after": () => "ran" },
    });
    expect(output.outcome).toEqual({ status: "Complete" });
  });

  it("an input breaking the state fails the run before any node", async () => {
    const { output, calls } = await runRecipe(graph({ count: { type: "number" } }), {
      agents: { "a.counter": () => 1, "a.after": () => "ran" },
      input: { inputs: { count: "many" } },
    });
    expect(calls).toEqual([]);
    expect(output.outcome).toMatchObject({ status: "Failed", error: { code: "invalid_state" } });
    expect((output.outcome as { error: { message: string } }).error.message).toMatch(
      /^input 'count': blackboard variable 'count' breaks/,
    );
  });

  it("a variable's schema that cannot be used refuses the recipe, naming its path", () => {
    const load = () => graph({ count: { type: "string", pattern: "(?<=x)y" } });
    expect(load).toThrow(RecipeValidationError);
    expect(load).toThrow(/^state\.properties\.count: /);
  });

  it("an evaluator's critique is a write of its feedback variable, checked the same way", async () => {
    const recipe = loadRecipe({
      ...HEADER,
      state: { properties: { review: { type: "object", properties: { critique: { type: "number" } } } } },
      topology: {
        nodes: [
          { type: "agent", id: "write", agent_ref: "a.writer", output_key: "draft" },
          {
            type: "evaluator",
            id: "judge",
            target_variable: "draft",
            evaluator_agent_ref: "a.judge",
            evaluation_profile: { clarity: "is it clear?" },
            pass_threshold: 0.7,
            max_refinements: 2,
            pass_route: "publish",
            fail_route: "write",
            feedback_variable: "review.critique",
          },
          { type: "agent", id: "publish", agent_ref: "a.publish" },
        ],
        edges: [{ source: "write", target: "judge" }],
      },
    });
    const { output, calls } = await runRecipe(recipe, {
      agents: {
        "a.writer": () => "a draft",
        "a.judge": () => ({ score: 0.1, critique: "add an example" }),
        "a.publish": () => "published",
      },
    });
    expect(calls.map((call) => call.node)).toEqual(["write", "judge"]);
    expect(output.outcome).toMatchObject({ status: "Failed", error: { code: "invalid_state" } });
    expect((output.outcome as { error: { message: string } }).error.message).toMatch(
      /^node 'judge': blackboard variable 'review' \(written at 'review.critique'\)/,
    );
    expect(output.blackboard).not.toHaveProperty("review");
  });
});
