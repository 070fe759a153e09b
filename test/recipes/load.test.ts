/**
 * Loading recipe documents (src/recipes/load.ts): both shapes from YAML and
 * JSON files, every shipped recipe, and each rejection naming its path.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  agentRefsOf,
  checkAgentRefs,
  type LoadOptions,
  loadRecipe,
  loadRecipeFile,
  MAX_RECIPE_NODES,
  MAX_RECIPE_TEXT,
  parseRecipeText,
  type RecipeIssue,
  RecipeValidationError,
} from "../../src/recipes/load.ts";
import type { Recipe } from "../../src/recipes/recipe.ts";
import { recipeJsonSchemas } from "../../src/recipes/schema.ts";

const FIXTURES = join(import.meta.dirname, "../fixtures/recipe-unit");
const RECIPES = join(import.meta.dirname, "../../recipes");
const fixture = (name: string) => join(FIXTURES, name);

/** The issues a document is refused with (fails the test when it loads). */
function issuesOf(document: unknown, options?: LoadOptions): RecipeIssue[] {
  try {
    loadRecipe(document, options);
  } catch (error) {
    expect(error).toBeInstanceOf(RecipeValidationError);
    expect((error as RecipeValidationError).code).toBe("invalid_recipe");
    return (error as RecipeValidationError).issues;
  }
  throw new Error("the document loaded");
}
const pathsOf = (document: unknown, options?: LoadOptions) => issuesOf(document, options).map((issue) => issue.path);

/** The issues of a text that does not parse. */
function textIssues(text: string): RecipeIssue[] {
  try {
    parseRecipeText(text);
  } catch (error) {
    expect(error).toBeInstanceOf(RecipeValidationError);
    return (error as RecipeValidationError).issues;
  }
  throw new Error("the text parsed");
}

const agent = (id: string, extra: Record<string, unknown> = {}) => ({
  type: "agent",
  id,
  agent_ref: "acme.worker",
  ...extra,
});
const graph = (topology: unknown, extra: Record<string, unknown> = {}) => ({
  apiVersion: "coreason.ai/v2",
  kind: "Recipe",
  metadata: { name: "t" },
  topology,
  ...extra,
});
const workflow = (steps: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  apiVersion: "coreason.ai/v2",
  kind: "Recipe",
  metadata: { name: "t" },
  workflow: { steps, ...extra },
});
const edge = (source: string, target: string, condition?: string) => ({
  source,
  target,
  ...(condition ? { condition } : {}),
});

describe("the graph shape, from YAML and from JSON", () => {
  const yaml = loadRecipeFile(fixture("graph.yaml"));
  const json = loadRecipeFile(fixture("graph.json"));

  it("loads the same recipe from both", () => {
    expect(json).toEqual(yaml);
    expect(loadRecipe(parseRecipeText(readFileSync(fixture("graph.json"), "utf8")))).toEqual(yaml);
  });

  it("keeps the document's facts: name, status, provenance, interface, state, constraints, policy", () => {
    const { nodes, ...rest } = yaml;
    expect(rest).toEqual({
      name: "unit-graph",
      version: "2.1",
      shape: "graph",
      status: "published",
      description: "Every graph node kind.",
      provenance: {
        generated_by: "model-x",
        confidence_score: 0.75,
        generation_rationale: "Because.",
        original_user_intent: "Write and review.",
      },
      inputs_schema: { type: "object", properties: { topic: { type: "string" } }, required: ["topic"] },
      outputs_schema: { type: "object" },
      state_properties: { draft: { type: "string" } },
      persistence: "redis",
      constraints: [
        { variable: "topic", operator: "neq", value: "", required: true, error_message: "a topic is needed" },
        { variable: "meta.count", operator: "gte", value: 1, required: false },
      ],
      policy: {
        max_retries: 2,
        timeout_seconds: 30,
        execution_mode: "parallel",
        max_steps: 12,
        human_in_the_loop: false,
      },
      entry: "classify",
    } satisfies Omit<Recipe, "nodes">);
    expect(nodes.map((node) => [node.id, node.kind, node.at])).toEqual([
      ["classify", "agent", "topology.nodes[0]"],
      ["route", "router", "topology.nodes[1]"],
      ["write", "agent", "topology.nodes[2]"],
      ["write_short", "agent", "topology.nodes[3]"],
      ["judge", "evaluator", "topology.nodes[4]"],
      ["approve", "human", "topology.nodes[5]"],
      ["publish", "agent", "topology.nodes[6]"],
      ["archive", "agent", "topology.nodes[7]"],
    ]);
  });

  it("normalizes each node kind", () => {
    const byId = new Map(yaml.nodes.map((node) => [node.id, node]));
    expect(byId.get("classify")).toEqual({
      kind: "agent",
      id: "classify",
      at: "topology.nodes[0]",
      agent: "triage.classifier",
      inputs_map: { text: "topic" },
      output_key: "triage",
      next: [{ target: "route" }],
    });
    expect(byId.get("write")).toMatchObject({ system_prompt: "Write well.", output_key: "draft" });
    // Without output_key, the answer goes under the node id; without inputs_map, none.
    expect(byId.get("publish")).toMatchObject({ output_key: "publish", inputs_map: {}, next: [] });
    expect(byId.get("route")).toEqual({
      kind: "router",
      id: "route",
      at: "topology.nodes[1]",
      input_key: "triage.category",
      routes: { long: "write", short: "write_short" },
      default_route: "write",
      next: [
        { target: "write", label: "long" },
        { target: "write_short", label: "short" },
        { target: "write", label: "default" },
      ],
    });
    expect(byId.get("judge")).toEqual({
      kind: "evaluator",
      id: "judge",
      at: "topology.nodes[4]",
      target_variable: "draft",
      judge: "content.judge",
      profile: { clarity: "high" },
      pass_threshold: 0.8,
      max_refinements: 2,
      pass_route: "approve",
      fail_route: "write",
      feedback_variable: "critique",
      next: [
        { target: "approve", label: "pass" },
        { target: "write", label: "fail" },
      ],
    });
    expect(byId.get("approve")).toEqual({
      kind: "human",
      id: "approve",
      at: "topology.nodes[5]",
      prompt: "Publish it?",
      timeout_seconds: 3600,
      required_role: "editor",
      timeout_route: "archive",
      output_key: "decision",
      next: [
        {
          target: "publish",
          label: "decision.approved == true",
          when: { op: "==", left: { op: "var", path: "decision.approved" }, right: { op: "lit", value: true } },
        },
        {
          target: "archive",
          label: "not decision.approved",
          when: { op: "not", arg: { op: "var", path: "decision.approved" } },
        },
      ],
    });
  });

  it("fills the defaults a document leaves out", () => {
    const recipe = loadRecipe(
      graph([
        agent("a"),
        {
          type: "evaluator",
          id: "judge",
          target_variable: "a",
          evaluator_agent_ref: "acme.judge",
          pass_threshold: 0.5,
          pass_route: "a",
          fail_route: "a",
        },
      ]),
    );
    expect(recipe).toMatchObject({
      status: "draft",
      persistence: "nats",
      constraints: [],
      policy: { max_retries: 0, execution_mode: "sequential", max_steps: 50, human_in_the_loop: false },
      entry: "a",
      provenance: {},
    });
    expect(recipe.policy.timeout_seconds).toBeUndefined();
    expect(recipe.nodes[1]).toMatchObject({
      profile: "default",
      max_refinements: 3,
      feedback_variable: "judge_feedback",
    });
  });
});

describe("the workflow shape, from YAML and from JSON", () => {
  const options = { logicHandlers: ["tally"] };
  const yaml = loadRecipeFile(fixture("workflow.yaml"), options);

  it("loads the same recipe from both", () => {
    expect(loadRecipeFile(fixture("workflow.json"), options)).toEqual(yaml);
  });

  it("keeps the document's facts, with the workflow's defaults", () => {
    expect(yaml).toMatchObject({
      name: "unit-workflow",
      shape: "workflow",
      status: "published",
      persistence: "postgres",
      state_properties: { verdict: { type: "string" } },
      constraints: [],
      policy: { max_retries: 3, timeout_seconds: 90, execution_mode: "sequential", max_steps: 20 },
      entry: "draft",
    });
  });

  it("normalizes each step kind; agents named by definition resolve to their id", () => {
    const byId = new Map(yaml.nodes.map((node) => [node.id, node]));
    expect(byId.get("draft")).toEqual({
      kind: "agent",
      id: "draft",
      at: "workflow.steps.draft",
      agent: "content.writer",
      system_prompt: "Draft it.",
      inputs_map: { topic: "request.topic" },
      output_key: "draft",
      next: [{ target: "vote" }],
    });
    expect(byId.get("vote")).toEqual({
      kind: "council",
      id: "vote",
      at: "workflow.steps.vote",
      voters: ["panel.a", "panel.b", "panel.c"],
      strategy: "majority",
      output_key: "vote",
      next: [{ target: "decide" }],
    });
    expect(byId.get("decide")).toMatchObject({
      kind: "switch",
      default: "ask",
      next: [
        { target: "tally", label: "vote.decision == 'yes'" },
        { target: "ask", label: "vote.decision == 'no'" },
        { target: "ask", label: "default" },
      ],
    });
    expect(byId.get("tally")).toEqual({
      kind: "logic",
      id: "tally",
      at: "workflow.steps.tally",
      handler: "tally",
      output_key: "tally",
      next: [{ target: "ask" }],
    });
    expect(byId.get("ask")).toMatchObject({ kind: "human", prompt: "Anything else?", output_key: "ask" });
    expect(byId.get("finish")).toMatchObject({ kind: "agent", agent: "ops.archiver", next: [] });
  });

  it("the first step is the start when none is named", () => {
    const recipe = loadRecipe(
      workflow({ one: { type: "agent", agent: "a.one" }, two: { type: "agent", agent: "a.two" } }),
    );
    expect(recipe.entry).toBe("one");
    expect(recipe.persistence).toBe("nats");
  });
});

describe("shorthand topologies are linear chains in list order", () => {
  it.each([
    ["shorthand-list.yaml", "topology"],
    ["shorthand-steps.json", "topology.steps"],
  ])("%s", (file, base) => {
    const recipe = loadRecipeFile(fixture(file));
    expect(recipe.entry).toBe("write");
    expect(recipe.nodes.map((node) => [node.id, node.at, node.next])).toEqual([
      ["write", `${base}[0]`, [{ target: "judge" }]],
      ["judge", `${base}[1]`, [{ target: "check" }]],
      ["check", `${base}[2]`, []],
    ]);
  });

  it("a shorthand node is named by its list index in issues", () => {
    expect(pathsOf(graph([agent("a"), agent("b", { agent_ref: "Bad Id" })]))).toEqual(["topology[1].agent_ref"]);
    expect(pathsOf(graph({ steps: [agent("a"), agent("b", { agent_ref: "Bad Id" })] }))).toEqual([
      "topology.steps[1].agent_ref",
    ]);
  });
});

describe("every shipped recipe loads", () => {
  const files = readdirSync(RECIPES).filter((file) => file.endsWith(".yaml"));

  it("there are some", () => {
    expect(files.length).toBeGreaterThanOrEqual(4);
  });

  it.each(files)("recipes/%s", (file) => {
    const recipe = loadRecipeFile(join(RECIPES, file));
    expect(recipe.nodes.length).toBeGreaterThan(0);
    expect(recipe.nodes.some((node) => node.id === recipe.entry)).toBe(true);
    expect(agentRefsOf(recipe).length).toBeGreaterThan(0);
  });
});

describe("rejections name the path of each issue", () => {
  it("wrong apiVersion", () => {
    expect(issuesOf({ ...graph([agent("a")]), apiVersion: "coreason.ai/v1" })).toEqual([
      { path: "apiVersion", message: 'must be coreason.ai/v2 (got "coreason.ai/v1")' },
    ]);
    expect(pathsOf({ kind: "Recipe", metadata: { name: "t" }, topology: [agent("a")] })).toEqual(["apiVersion"]);
  });

  it("not an object", () => {
    for (const document of [null, "text", 3, [graph([agent("a")])]]) expect(pathsOf(document)).toEqual(["(document)"]);
  });

  it("neither topology nor workflow", () => {
    expect(pathsOf({ apiVersion: "coreason.ai/v2", kind: "Recipe", metadata: { name: "t" } })).toEqual(["(document)"]);
  });

  it("missing metadata.name", () => {
    expect(pathsOf({ ...graph([agent("a")]), metadata: {} })).toEqual(["metadata.name"]);
    expect(pathsOf({ ...workflow({ a: { type: "agent", agent: "a.b" } }), metadata: { version: "1" } })).toEqual([
      "metadata.name",
    ]);
  });

  it("unknown constraint operator", () => {
    const document = graph([agent("a")], { requirements: [{ variable: "v", operator: "like", value: 1 }] });
    expect(pathsOf(document)).toEqual(["requirements[0].operator"]);
  });

  it("duplicate node ids", () => {
    expect(issuesOf(graph({ nodes: [agent("a"), agent("b"), agent("a")] }))).toEqual([
      { path: "topology.nodes[2].id", message: "duplicate node id 'a'" },
    ]);
  });

  it("unknown entry point", () => {
    expect(issuesOf(graph({ nodes: [agent("a")], entry_point: "nope" }))).toEqual([
      { path: "topology.entry_point", message: "unknown node 'nope' (nodes: a)" },
    ]);
    expect(pathsOf(workflow({ a: { type: "agent", agent: "a.b" } }, { start: "nope" }))).toEqual(["workflow.start"]);
  });

  it("edge to an unknown node", () => {
    expect(issuesOf(graph({ nodes: [agent("a")], edges: [edge("a", "ghost")] }))).toEqual([
      { path: "topology.nodes[0]", message: "leads to unknown node 'ghost' (nodes: a)" },
    ]);
    expect(pathsOf(workflow({ a: { type: "agent", agent: "a.b", next: "ghost" } }))).toEqual(["workflow.steps.a"]);
  });

  // An edge from no node belongs to no node's transitions: only the edge itself can name it.
  it("edge from an unknown node", () => {
    expect(issuesOf(graph({ nodes: [agent("a")], edges: [edge("a", "a"), edge("ghost", "a")] }))).toEqual([
      { path: "topology.edges[1].source", message: "unknown node 'ghost' (nodes: a)" },
    ]);
    const draft = graph({ nodes: [agent("a")], edges: [edge("ghost", "a")], status: "draft" });
    expect(pathsOf(draft)).toEqual(["topology.edges[0].source"]);
    expect(loadRecipe(draft, { forRun: false }).nodes).toHaveLength(1);
  });

  it("a malformed node is named by its own path, in each form of topology", () => {
    const bad = { type: "agent", id: "b" };
    expect(issuesOf(graph({ nodes: [agent("a"), bad] }))).toEqual([
      {
        path: "topology.nodes[1].agent_ref",
        message: "expected an agent id, or an abstract reference {intent, constraints, candidates}",
      },
    ]);
    expect(pathsOf(graph([agent("a"), bad]))).toEqual(["topology[1].agent_ref"]);
    expect(pathsOf(graph({ steps: [bad] }))).toEqual(["topology.steps[0].agent_ref"]);
    expect(pathsOf(graph({ nodes: [agent("a")], edges: [{ source: "a" }] }))).toEqual(["topology.edges[0].target"]);
    expect(pathsOf(graph({ nodes: [{ ...bad, type: "loop" }] }))).toEqual(["topology.nodes[0].type"]);
    expect(issuesOf(graph("a, b"))).toEqual([
      { path: "topology", message: "expected a list of nodes, {nodes: [...], edges: [...]}, or {steps: [...]}" },
    ]);
  });

  it("router route to an unknown node, and its default_route", () => {
    const router = { type: "router", id: "r", input_key: "k", routes: { x: "a", y: "ghost" } };
    expect(issuesOf(graph({ nodes: [router, agent("a")] }))).toEqual([
      { path: "topology.nodes[0]", message: "leads to unknown node 'ghost' (nodes: r, a)" },
    ]);
    expect(pathsOf(graph({ nodes: [{ ...router, routes: { x: "a" }, default_route: "gone" }, agent("a")] }))).toEqual([
      "topology.nodes[0]",
    ]);
  });

  it("evaluator and switch routes to unknown nodes", () => {
    const evaluator = {
      type: "evaluator",
      id: "judge",
      target_variable: "a",
      evaluator_agent_ref: "acme.judge",
      pass_threshold: 0.5,
      pass_route: "nowhere",
      fail_route: "a",
    };
    expect(pathsOf(graph({ nodes: [agent("a"), evaluator], edges: [edge("a", "judge")] }))).toEqual([
      "topology.nodes[1]",
    ]);
    expect(pathsOf(workflow({ s: { type: "switch", cases: { "x == 1": "ghost" }, default: "s" } }))).toEqual([
      "workflow.steps.s",
    ]);
  });

  describe("abstract agent references", () => {
    const abstract = { type: "agent", id: "a", agent_ref: { intent: "write", candidates: ["acme.writer"] } };

    it("refused in a published recipe, whatever forRun says", () => {
      for (const forRun of [true, false])
        expect(issuesOf(graph({ nodes: [abstract] }, { status: "published" }), { forRun })).toEqual([
          {
            path: "topology.nodes[0].agent_ref",
            message:
              "abstract agent reference (intent 'write') must be resolved to an agent id before the recipe is published",
          },
        ]);
    });

    it("refused in a draft that is to run; accepted in a draft only validated", () => {
      expect(issuesOf(graph({ nodes: [abstract] }))).toEqual([
        {
          path: "topology.nodes[0].agent_ref",
          message: "abstract agent reference (intent 'write') must be resolved to an agent id before the recipe runs",
        },
      ]);
      expect(pathsOf(graph({ nodes: [abstract] }), { forRun: true })).toEqual(["topology.nodes[0].agent_ref"]);
      expect(loadRecipe(graph({ nodes: [abstract] }), { forRun: false }).nodes[0]).toMatchObject({ agent: "" });
    });
  });

  it("generative node", () => {
    expect(issuesOf(graph({ nodes: [agent("a"), { type: "generative", id: "gen", goal: "anything" }] }))).toEqual([
      {
        path: "topology.nodes[1].type",
        message: "generative nodes are not supported by Conclave (yet): the recipe cannot run",
      },
    ]);
    // Led to, it is also an unknown node to the edge (it is never loaded).
    expect(pathsOf(graph([agent("a"), { type: "generative", id: "gen", goal: "anything" }]))).toEqual([
      "topology[1].type",
      "topology[0]",
    ]);
  });

  describe("logic steps", () => {
    afterEach(() => {
      delete (globalThis as { x?: unknown }).x;
    });
    const document = () =>
      workflow({
        first: { type: "agent", agent: "acme.worker", next: "that_step" },
        that_step: { type: "logic", code: "globalThis.x = 1", next: "last" },
        last: { type: "agent", agent: "acme.worker" },
      });

    it("refused without a handler of the step's id", () => {
      const issues = issuesOf(document());
      expect(issues.map((issue) => issue.path)).toEqual(["workflow.steps.that_step"]);
      expect(issues[0]!.message).toMatch(/register a handler named 'that_step'/);
      expect(pathsOf(document(), { logicHandlers: ["other_step"] })).toEqual(["workflow.steps.that_step"]);
    });

    it("accepted with one, and its code is never executed", () => {
      const recipe = loadRecipe(document(), { logicHandlers: ["that_step"] });
      expect(recipe.nodes[1]).toEqual({
        kind: "logic",
        id: "that_step",
        at: "workflow.steps.that_step",
        handler: "that_step",
        output_key: "that_step",
        next: [{ target: "last" }],
      });
      expect(JSON.stringify(recipe)).not.toContain("globalThis");
      expect((globalThis as { x?: unknown }).x).toBeUndefined();
    });
  });

  it("bad condition syntax in a switch case", () => {
    const document = workflow({
      s: { type: "switch", cases: { "ok == true": "t", "x ==": "t" }, default: "t" },
      t: { type: "agent", agent: "acme.worker" },
    });
    expect(issuesOf(document)).toEqual([
      { path: 'workflow.steps.s.cases["x =="]', message: "condition 'x ==': at column 5: expected a value" },
    ]);
  });

  it("bad condition syntax in an edge", () => {
    const document = graph({
      nodes: [agent("a"), agent("b"), agent("c")],
      edges: [edge("a", "b", "ok == true"), edge("a", "c", "score = 1")],
    });
    expect(issuesOf(document)).toEqual([
      {
        path: "topology.edges[1].condition",
        message: "condition 'score = 1': at column 7: expected an operator, a name, a number or a string",
      },
    ]);
  });

  it("bad agent ids, wherever an agent is named", () => {
    expect(pathsOf(graph([agent("a", { agent_ref: "Not An Id!" })]))).toEqual(["topology[0].agent_ref"]);
    const judge = {
      type: "evaluator",
      id: "j",
      target_variable: "a",
      evaluator_agent_ref: "JUDGE",
      pass_threshold: 0.5,
      pass_route: "a",
      fail_route: "a",
    };
    expect(pathsOf(graph({ nodes: [agent("a"), judge], edges: [edge("a", "j")] }))).toEqual([
      "topology.nodes[1].evaluator_agent_ref",
    ]);
    expect(pathsOf(workflow({ s: { type: "agent", agent: "BAD ID" } }))).toEqual(["workflow.steps.s.agent"]);
    expect(pathsOf(workflow({ v: { type: "council", voters: ["acme.a", "not valid"] } }))).toEqual([
      "workflow.steps.v.voters[1]",
    ]);
    // A step naming a tool definition is not an agent.
    const withTool = {
      ...workflow({ s: { type: "agent", agent: "search" } }),
      definitions: { search: { type: "tool", id: "web-search", name: "Search", risk_level: "safe" } },
    };
    expect(issuesOf(withTool)).toEqual([
      { path: "workflow.steps.s.agent", message: "'search' is a tool definition, not an agent" },
    ]);
    // A definition's bad id is named where it is defined.
    const badDefinition = {
      ...workflow({ s: { type: "agent", agent: "Writer" } }),
      definitions: { Writer: { type: "agent", id: "Also Bad" } },
    };
    expect(pathsOf(badDefinition)).toEqual(["definitions.Writer.id"]);
  });

  it("a blackboard path through __proto__, constructor or an empty segment", () => {
    expect(issuesOf(graph([agent("a", { output_key: "a.__proto__.b" })]))).toEqual([
      { path: "topology[0].output_key", message: "path 'a.__proto__.b' may not use '__proto__'" },
    ]);
    expect(pathsOf(graph([agent("a", { inputs_map: { x: "constructor.prototype" } })]))).toEqual([
      "topology[0].inputs_map.x",
    ]);
    expect(pathsOf(graph([{ type: "router", id: "r", input_key: "a..b", routes: {} }]))).toEqual([
      "topology[0].input_key",
    ]);
    expect(
      pathsOf(graph([agent("a")], { requirements: [{ variable: "__proto__", operator: "eq", value: 1 }] })),
    ).toEqual(["requirements[0].variable"]);
  });

  it("a fork whose branches do not meet", () => {
    // route → h | j | k; h forks to b1 → j and b2 → k, and j and k are reached from elsewhere too.
    const document = graph({
      nodes: [
        { type: "router", id: "route", input_key: "kind", routes: { one: "h", two: "j", three: "k" } },
        agent("h"),
        agent("b1"),
        agent("b2"),
        agent("j"),
        agent("k"),
      ],
      edges: [edge("h", "b1"), edge("h", "b2"), edge("b1", "j"), edge("b2", "k")],
    });
    expect(issuesOf(document)).toEqual([
      {
        path: "topology.nodes[1]",
        message: "the branches of the fork at 'h' must meet at one node (they reach j, k)",
      },
    ]);
  });

  it("a router inside a fork's branch", () => {
    const document = graph({
      nodes: [agent("h"), agent("b1"), { type: "router", id: "r", input_key: "k", routes: { x: "j" } }, agent("j")],
      edges: [edge("h", "b1"), edge("h", "r"), edge("b1", "j")],
    });
    // The router, and then the fork at h whose branches (cut short at r) do not meet.
    expect(pathsOf(document)).toEqual(["topology.nodes[2]", "topology.nodes[0]"]);
    expect(issuesOf(document)[0]!.message).toBe(
      "'r' is a router node inside the branches of the fork at 'h': branches hold agent, logic and council nodes only",
    );
  });

  it("kind Agent", () => {
    expect(issuesOf({ ...workflow({ s: { type: "agent", agent: "acme.worker" } }), kind: "Agent" })).toEqual([
      { path: "kind", message: "kind Agent describes one agent, not a runnable recipe" },
    ]);
    expect(pathsOf({ ...graph([agent("a")]), kind: "Agent" })).toEqual(["kind"]);
  });

  it("too many nodes", () => {
    const nodes = Array.from({ length: MAX_RECIPE_NODES + 1 }, (_, index) => agent(`n${index}`));
    expect(issuesOf(graph(nodes))).toEqual([
      { path: "(document)", message: `${MAX_RECIPE_NODES + 1} nodes: at most ${MAX_RECIPE_NODES}` },
    ]);
  });

  it("no node at all", () => {
    expect(pathsOf(graph([]))).toEqual(["topology", "topology.entry_point"]);
    expect(pathsOf(workflow({}))).toEqual(["workflow.steps", "workflow.start"]);
  });

  it("collects every issue, not only the first", () => {
    const document = graph([
      agent("a", { agent_ref: "Bad" }),
      agent("b", { output_key: "x.constructor" }),
      { type: "generative", id: "g", goal: "x" },
    ]);
    expect(pathsOf(document)).toEqual([
      "topology[0].agent_ref",
      "topology[2].type",
      "topology[1].output_key",
      "topology[1]", // leads on to the generative node, which is not loaded
    ]);
  });
});

describe("draft topologies", () => {
  // Structural problems: an unknown entry point, and an edge to an unknown node.
  const draft = (status: "draft" | "valid") =>
    graph({ nodes: [agent("a"), agent("b")], entry_point: "nope", status, edges: [edge("a", "ghost")] });

  it("are validated without their structural problems when not to run", () => {
    const recipe = loadRecipe(draft("draft"), { forRun: false });
    expect(recipe.entry).toBe("nope");
    expect(recipe.nodes[0]!.next).toEqual([{ target: "ghost" }]);
  });

  it("are refused with them when to run (the default)", () => {
    const expected = ["topology.entry_point", "topology.nodes[0]"];
    expect(pathsOf(draft("draft"), { forRun: true })).toEqual(expected);
    expect(pathsOf(draft("draft"))).toEqual(expected);
  });

  it("a valid topology, or a published recipe, is checked either way", () => {
    expect(pathsOf(draft("valid"), { forRun: false })).toEqual(["topology.entry_point", "topology.nodes[0]"]);
    expect(pathsOf({ ...draft("draft"), status: "published" }, { forRun: false })).toEqual([
      "topology.entry_point",
      "topology.nodes[0]",
    ]);
  });

  it("duplicate ids are an error even in a draft", () => {
    expect(pathsOf(graph({ nodes: [agent("a"), agent("a")], status: "draft" }), { forRun: false })).toEqual([
      "topology.nodes[1].id",
    ]);
  });
});

describe("document text", () => {
  it("a YAML syntax error names its line and column", () => {
    let error: unknown;
    try {
      loadRecipeFile(fixture("bad-syntax.yaml"));
    } catch (thrown) {
      error = thrown;
    }
    expect(error).toBeInstanceOf(RecipeValidationError);
    expect((error as RecipeValidationError).issues).toEqual([
      { path: "line 9, column 1", message: "All mapping items must start at the same column" },
    ]);
    expect((error as Error).message).toBe(
      `${fixture("bad-syntax.yaml")}: line 9, column 1: All mapping items must start at the same column`,
    );
  });

  it("JSON syntax errors and duplicate keys too", () => {
    expect(textIssues('{\n  "apiVersion": "coreason.ai/v2",,\n}').map((issue) => issue.path)[0]).toMatch(
      /^line 2, column \d+$/,
    );
    expect(textIssues("apiVersion: coreason.ai/v2\nkind: Recipe\nkind: Agent\n")).toEqual([
      { path: "line 3, column 1", message: "Map keys must be unique" },
    ]);
  });

  it("an over-size document is refused before it is parsed", () => {
    const text = `# ${"x".repeat(MAX_RECIPE_TEXT)}\napiVersion: coreason.ai/v2\n`;
    expect(textIssues(text)).toEqual([{ path: "(document)", message: `longer than ${MAX_RECIPE_TEXT} characters` }]);
    expect(() => parseRecipeText("x".repeat(MAX_RECIPE_TEXT))).not.toThrow();
  });

  it("a file that cannot be read is a usage error", () => {
    expect(() => loadRecipeFile(fixture("no-such-file.yaml"))).toThrow(
      expect.objectContaining({ code: "usage", message: expect.stringMatching(/cannot read .*ENOENT/) }),
    );
  });

  it("a file's issues are prefixed by its name", () => {
    try {
      loadRecipeFile(fixture("workflow.yaml"));
      throw new Error("loaded without its logic handler");
    } catch (error) {
      expect(error).toBeInstanceOf(RecipeValidationError);
      expect((error as Error).message.startsWith(`${fixture("workflow.yaml")}: workflow.steps.tally: `)).toBe(true);
    }
  });
});

describe("agent references", () => {
  const recipe = loadRecipeFile(fixture("graph.yaml"));

  it("agentRefsOf lists agents, judges and voters once each", () => {
    expect(agentRefsOf(recipe).sort()).toEqual([
      "content.judge",
      "content.writer",
      "ops.archiver",
      "ops.publisher",
      "triage.classifier",
    ]);
    const council = loadRecipeFile(fixture("workflow.yaml"), { logicHandlers: ["tally"] });
    expect(agentRefsOf(council).sort()).toEqual(["content.writer", "ops.archiver", "panel.a", "panel.b", "panel.c"]);
  });

  it("checkAgentRefs names each node whose agent no live worker hosts", () => {
    const live = new Set(["content.writer", "content.judge", "triage.classifier"]);
    expect(checkAgentRefs(recipe, live)).toEqual([
      {
        path: "topology.nodes[6]",
        message: "no live worker hosts agent 'ops.publisher' (live: content.judge, content.writer, triage.classifier)",
      },
      {
        path: "topology.nodes[7]",
        message: "no live worker hosts agent 'ops.archiver' (live: content.judge, content.writer, triage.classifier)",
      },
    ]);
    expect(checkAgentRefs(recipe, new Set(agentRefsOf(recipe)))).toEqual([]);
    // One issue per node: classify, write, write_short, judge, publish, archive.
    expect(checkAgentRefs(recipe, new Set())).toHaveLength(6);
  });
});

describe("recipeJsonSchemas", () => {
  it("gives each shape's JSON Schema, documenting the three forms of a topology and x-design", () => {
    const { graph: graphSchema, workflow: workflowSchema } = recipeJsonSchemas();
    const text = JSON.stringify(graphSchema);
    expect(graphSchema).toMatchObject({ type: "object", required: expect.arrayContaining(["apiVersion", "topology"]) });
    expect(text).toContain('"tree_search"');
    expect(text).toContain('"collapsed"');
    expect((graphSchema as { properties: { topology: { anyOf: unknown[] } } }).properties.topology.anyOf).toHaveLength(
      3,
    );
    expect(workflowSchema).toMatchObject({ required: expect.arrayContaining(["workflow"]) });
  });
});

describe("realistic documents (test/fixtures/recipe-validate)", () => {
  const realistic = (name: string) => join(import.meta.dirname, "../fixtures/recipe-validate", name);

  it("a published graph recipe: provenance, x-design and UI hints ignored, routes and judge as transitions", () => {
    const recipe = loadRecipeFile(realistic("graph-support.yaml"));
    expect(recipe).toMatchObject({
      name: "support-reply",
      shape: "graph",
      status: "published",
      provenance: { generated_by: "planner-model-7", confidence_score: 0.82 },
      persistence: "redis",
      policy: { max_retries: 2, timeout_seconds: 300, max_steps: 40 },
      entry: "classify",
    });
    expect(recipe.constraints.map((constraint) => constraint.required)).toEqual([true, false]);
    const byId = new Map(recipe.nodes.map((node) => [node.id, node]));
    expect(byId.get("route")!.next).toEqual([
      { target: "draft", label: "billing" },
      { target: "draft", label: "technical" },
      { target: "escalate", label: "default" },
    ]);
    expect(byId.get("judge")!.next.map((transition) => transition.label)).toEqual(["pass", "fail"]);
    expect(byId.get("check")!.next[0]).toMatchObject({ target: "send", label: expect.stringContaining("and") });
    expect(byId.get("check")!.next[0]!.when).toMatchObject({ op: "and" });
    expect(JSON.stringify(recipe)).not.toMatch(/x-design|presentation|#3366ff/);
  });

  it("a workflow manifest in YAML: its logic step's code is kept nowhere and never runs", () => {
    const file = realistic("workflow-release.yaml");
    expect(() => loadRecipeFile(file)).toThrow(/logic step 'count' runs host code/);
    const recipe = loadRecipeFile(file, { logicHandlers: new Set(["count"]) });
    expect(recipe).toMatchObject({ shape: "workflow", persistence: "postgres", entry: "write" });
    expect(recipe.nodes.map((node) => `${node.kind}:${node.id}`)).toEqual([
      "agent:write",
      "logic:count",
      "council:vote",
      "switch:decide",
      "human:ask",
      "agent:publish",
    ]);
    expect(recipe.nodes[0]).toMatchObject({ agent: "docs.writer" });
    expect(JSON.stringify(recipe)).not.toContain("globalThis");
    expect((globalThis as { __recipeValidateCodeRan?: unknown }).__recipeValidateCodeRan).toBeUndefined();
  });

  it("a draft sketch loads to be looked at, not to run", () => {
    const file = realistic("draft-sketch.yaml");
    expect(loadRecipeFile(file, { forRun: false }).nodes).toHaveLength(2);
    expect(() => loadRecipeFile(file)).toThrow(RecipeValidationError);
  });
});
