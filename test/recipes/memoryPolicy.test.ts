/**
 * `policy.memory` (a Conclave extension, both recipe shapes): parsed with its
 * defaults, refused in one clear line when it is not {retrieve, commit}
 * booleans, and accepted by `conclave recipe validate`.
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { CONCLAVE_BIN } from "../../src/cli/childProcess.ts";
import type { JsonObject } from "../../src/contracts/recipeRun.ts";
import { loadRecipe, RecipeValidationError } from "../../src/recipes/load.ts";
import { runInputText, runOutputText } from "../../src/runtime/recipeHost/runMemory.ts";

const graph = (policy?: JsonObject): JsonObject => ({
  apiVersion: "coreason.ai/v2",
  kind: "Recipe",
  metadata: { name: "graph" },
  ...(policy ? { policy } : {}),
  topology: [{ type: "agent", id: "echo", agent_ref: "test.memory_echo" }],
});
const workflow = (policy: JsonObject): JsonObject => ({
  apiVersion: "coreason.ai/v2",
  kind: "Recipe",
  metadata: { name: "workflow" },
  policy,
  workflow: { steps: { echo: { type: "agent", agent: "test.memory_echo" } } },
});

/** The one-line issues loading `document` raised (none: it loaded). */
function issuesOf(document: JsonObject): string[] {
  try {
    loadRecipe(document);
    return [];
  } catch (error) {
    if (!(error instanceof RecipeValidationError)) throw error;
    return error.issues.map((issue) => `${issue.path}: ${issue.message}`);
  }
}

describe("policy.memory", () => {
  it("is absent unless written (both on), and filled with its defaults in either shape", () => {
    expect(loadRecipe(graph()).policy.memory).toBeUndefined();
    expect(loadRecipe(graph({ memory: { retrieve: false } })).policy.memory).toEqual({
      retrieve: false,
      commit: true,
    });
    expect(loadRecipe(workflow({ memory: { commit: false } })).policy.memory).toEqual({
      retrieve: true,
      commit: false,
    });
    expect(loadRecipe(workflow({ memory: {} })).policy.memory).toEqual({ retrieve: true, commit: true });
  });

  it("refuses a misspelt switch, a value that is not a boolean, and a block that is not an object, each in one line", () => {
    expect(issuesOf(graph({ memory: { retreive: false } }))).toEqual([
      "policy.memory: takes only retrieve and commit (not retreive)",
    ]);
    expect(issuesOf(workflow({ memory: { commit: "no" } }))).toEqual(["policy.memory.commit: must be true or false"]);
    expect(issuesOf(graph({ memory: true }))).toEqual([
      "policy.memory: must be {retrieve: boolean, commit: boolean} (either may be left out)",
    ]);
  });

  it("is accepted by conclave recipe validate", async () => {
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [CONCLAVE_BIN, "recipe", "validate", "test/fixtures/recipe-memory/memory-off.yaml"],
      { env: { ...process.env, CONCLAVE_LOG: "quiet" } },
    );
    expect(stdout.trim()).toBe("ok test/fixtures/recipe-memory/memory-off.yaml: recipe 'memory-off' (graph, 1 node)");
  });
});

describe("a run's text for memory", () => {
  it("is a single input's value as it is, several as key: value lines, and the outputs as JSON, bounded", () => {
    expect(runInputText({ question: "Where can I buy saffron?" })).toBe("Where can I buy saffron?");
    expect(runInputText({ topic: "tides", words: 300 })).toBe("topic: tides\nwords: 300");
    const long = runInputText({ text: "x".repeat(10_000) });
    expect(long).toHaveLength(4_000);
    expect(long.endsWith("…")).toBe(true);
    expect(runOutputText({ answer: "yes" })).toBe('{"answer":"yes"}');
  });
});
