/**
 * A recipe's `requirements` checked again before each node, against the
 * blackboard as the nodes before left it: a required constraint that stops
 * holding fails the node it stands before; an optional one warns, once.
 */
import { describe, expect, it } from "vitest";
import { loadRecipe } from "../../src/recipes/load.ts";
import type { Recipe } from "../../src/recipes/recipe.ts";
import { kindsOf, recordsOf, runRecipe } from "../helpers/recipeMachine.ts";

const HEADER = { apiVersion: "coreason.ai/v2", kind: "Recipe", metadata: { name: "test" } } as const;

/** fetch (writes data.rows) → clean → report, with one constraint on data.rows. */
const recipe = (required: boolean): Recipe =>
  loadRecipe({
    ...HEADER,
    requirements: [
      { variable: "data.rows", operator: "gt", value: 0, required, error_message: "the data has no rows" },
    ],
    topology: [
      { type: "agent", id: "fetch", agent_ref: "a.fetch", output_key: "data.rows" },
      { type: "agent", id: "clean", agent_ref: "a.clean" },
      { type: "agent", id: "report", agent_ref: "a.report" },
    ],
  });

describe("per-node constraints", () => {
  it("a required constraint that a node breaks fails the next node with its error_message", async () => {
    const { output, calls, records } = await runRecipe(recipe(true), {
      agents: { "a.fetch": () => 0, "a.clean": () => "cleaned", "a.report": () => "reported" },
      input: { inputs: { data: { rows: 3 } } },
    });
    // The pre-flight check passed (3 rows); fetch wrote 0; clean never ran.
    expect(recordsOf(records, "PREFLIGHT_CHECKED")[0]).toMatchObject({ passed: true });
    expect(calls.map((call) => call.node)).toEqual(["fetch"]);
    expect(output.outcome).toEqual({
      status: "Failed",
      error: { code: "constraint_failed", message: "node 'clean': the data has no rows" },
    });
    expect(recordsOf(records, "NODE_FAILED")).toEqual([
      {
        node: "clean",
        kind: "agent",
        code: "constraint_failed",
        message: "the data has no rows",
        attempt: 1,
        retrying: false,
      },
    ]);
    expect(recordsOf(records, "NODE_STARTED").map((started) => started.node)).toEqual(["fetch", "clean"]);
    expect(kindsOf(records).at(-1)).toBe("TURN_COMPLETED");
  });

  it("constraints that hold at every node let the run complete", async () => {
    const { output, calls } = await runRecipe(recipe(true), {
      agents: { "a.fetch": () => 5, "a.clean": () => "cleaned", "a.report": () => "reported" },
      input: { inputs: { data: { rows: 3 } } },
    });
    expect(output.outcome).toEqual({ status: "Complete" });
    expect(calls.map((call) => call.node)).toEqual(["fetch", "clean", "report"]);
  });

  it("an optional constraint a node breaks is one STAGE_WARNING, and the run goes on", async () => {
    const { output, calls, records } = await runRecipe(recipe(false), {
      agents: { "a.fetch": () => 0, "a.clean": () => "cleaned", "a.report": () => "reported" },
      input: { inputs: { data: { rows: 3 } } },
    });
    expect(calls.map((call) => call.node)).toEqual(["fetch", "clean", "report"]);
    const warning = { stage: "recipe", code: "constraint", message: "the data has no rows", subject: "data.rows" };
    // Broken before clean and still broken before report: warned once.
    expect(recordsOf(records, "STAGE_WARNING")).toEqual([warning]);
    expect(output.outcome).toEqual({ status: "PartialSuccess", warnings: [warning] });
    const kinds = kindsOf(records);
    const cleanStarted = recordsOf(records, "NODE_STARTED").findIndex((started) => started.node === "clean");
    expect(cleanStarted).toBe(1);
    expect(kinds.indexOf("STAGE_WARNING")).toBeGreaterThan(kinds.indexOf("NODE_COMPLETED"));
  });

  it("an optional constraint warned about at the pre-flight check is not warned about again per node", async () => {
    const { output, records } = await runRecipe(recipe(false), {
      agents: { "a.fetch": () => 0, "a.clean": () => "cleaned", "a.report": () => "reported" },
      input: { inputs: { data: { rows: 0 } } },
    });
    expect(recordsOf(records, "STAGE_WARNING")).toHaveLength(1);
    expect(output.outcome).toMatchObject({ status: "PartialSuccess" });
  });
});
