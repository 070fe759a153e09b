/**
 * Skills declared in a recipe (Conclave's `skills:` extension, docs/recipes.md "Skills"): the
 * recipe's and each agent node's are kept, a bad id is refused naming its path, a document
 * without them loads as before, and each agent call of the run carries them (with the skills
 * activated for the session) as AgentRequest `active_skills`.
 */
import { describe, expect, it } from "vitest";
import type { MemoryRetrieveReply } from "../../src/contracts/memory.ts";
import type { RecipeAgentCall } from "../../src/contracts/recipeProtocol.ts";
import { loadRecipe, RecipeValidationError } from "../../src/recipes/load.ts";
import { agentRequest, delegatedRequest } from "../../src/runtime/recipeHost/recipeActors.ts";

const workflow = (extra: Record<string, unknown> = {}, step: Record<string, unknown> = {}) => ({
  apiVersion: "coreason.ai/v2",
  kind: "Recipe",
  metadata: { name: "skilled" },
  ...extra,
  definitions: { writer: { type: "agent", id: "acme.writer" } },
  workflow: {
    start: "write",
    steps: {
      write: { type: "agent", agent: "writer", next: "check", ...step },
      check: { type: "agent", agent: "writer" },
    },
  },
});

const graph = {
  apiVersion: "coreason.ai/v2",
  kind: "Recipe",
  metadata: { name: "skilled-graph" },
  skills: ["house-style"],
  topology: {
    nodes: [
      { type: "agent", id: "draft", agent_ref: "acme.writer", skills: ["report", "report"] },
      { type: "agent", id: "polish", agent_ref: "acme.writer" },
    ],
    edges: [{ source: "draft", target: "polish" }],
    entry_point: "draft",
  },
};

const call = (node: string): RecipeAgentCall =>
  ({
    session_id: "s",
    turn_id: 1,
    node,
    agent: "acme.writer",
    prompt: "hello",
    inputs: {},
    attempt: 1,
  }) as RecipeAgentCall;

describe("skills declared in a recipe", () => {
  it("keeps the recipe's and each agent node's skills (both shapes)", () => {
    const recipe = loadRecipe(workflow({ skills: ["house-style"] }, { skills: ["report"] }));
    expect(recipe.skills).toEqual(["house-style"]);
    expect(recipe.nodes.map((node) => (node.kind === "agent" ? node.skills : null))).toEqual([["report"], undefined]);
    const fromGraph = loadRecipe(graph);
    expect(fromGraph.skills).toEqual(["house-style"]);
    expect(fromGraph.nodes.map((node) => (node.kind === "agent" ? node.skills : null))).toEqual([
      ["report"],
      undefined,
    ]);
  });

  it("gives a workflow step its agent definition's skills too, then its own", () => {
    const document = workflow({}, { skills: ["report", "summary"] }) as ReturnType<typeof workflow> & {
      definitions: { writer: Record<string, unknown> };
    };
    document.definitions.writer = { type: "agent", id: "acme.writer", skills: ["house-style", "report"] };
    const recipe = loadRecipe(document);
    expect(recipe.nodes.map((node) => (node.kind === "agent" ? node.skills : null))).toEqual([
      ["house-style", "report", "summary"],
      ["house-style", "report"],
    ]);
  });

  it("loads a document without skills as before", () => {
    const recipe = loadRecipe(workflow());
    expect("skills" in recipe).toBe(false);
    expect(recipe.nodes.every((node) => !("skills" in node))).toBe(true);
  });

  it("refuses a bad skill id, naming its path", () => {
    let error: unknown;
    try {
      loadRecipe(workflow({ skills: ["Not A Skill"] }, { skills: ["ok", "Bad!"] }));
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(RecipeValidationError);
    const issues = (error as RecipeValidationError).issues;
    expect(issues.map((issue) => issue.path)).toEqual(["skills[0]", "workflow.steps.write.skills[1]"]);
    expect(issues[0]?.message).toMatch(/a skill id is lowercase/);
  });

  it("gives each agent call the session's, the recipe's and its node's skills, once each", () => {
    const recipe = loadRecipe(graph);
    const memory = { episodes: [], user_facts: [], open_threads: [], active_skills: ["report", "pinned"] };
    expect(agentRequest(recipe, call("draft"), 1_000).active_skills).toEqual(["house-style", "report"]);
    expect(agentRequest(recipe, call("polish"), 1_000).active_skills).toEqual(["house-style"]);
    expect(agentRequest(recipe, call("draft"), 1_000, memory as MemoryRetrieveReply).active_skills).toEqual([
      "report",
      "pinned",
      "house-style",
    ]);
    expect(
      delegatedRequest({ session_id: "s", turn_id: 1 }, "acme.helper", "hi", 1_000, undefined, recipe.skills),
    ).toMatchObject({ active_skills: ["house-style"] });
    const bare = loadRecipe(workflow());
    expect("active_skills" in agentRequest(bare, call("write"), 1_000)).toBe(false);
  });
});
