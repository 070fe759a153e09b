import { execFile } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { compileRecipe } from "../../machines/recipe/index.ts";
import { CONCLAVE_BIN } from "../../src/cli/childProcess.ts";
import { renderMachine } from "../../src/graph/formats.ts";
import { loadRecipeFile } from "../../src/recipes/load.ts";
import { recipeJsonSchemas } from "../../src/recipes/schema.ts";
import { readDot } from "../graph/dotShape.ts";
import { readMermaid } from "../graph/mermaidSyntax.ts";

/** `conclave recipe …` as a child process, the way a user runs it: its status and output. */
const recipe = (...args: string[]) =>
  promisify(execFile)(process.execPath, [CONCLAVE_BIN, "recipe", ...args], {
    env: { ...process.env, CONCLAVE_LOG: "quiet" },
  }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (error: { code: number; stdout: string; stderr: string }) => ({
      code: error.code,
      stdout: error.stdout,
      stderr: error.stderr,
    }),
  );

const lines = (text: string) => text.split("\n").filter((line) => line !== "");
const SHIPPED = readdirSync("recipes")
  .filter((file) => file.endsWith(".yaml"))
  .map((file) => `recipes/${file}`);
const FIXTURES = "test/fixtures/recipe-cli";
const fixture = (name: string) => `${FIXTURES}/${name}.yaml`;
const out = mkdtempSync(join(tmpdir(), "conclave-recipe-cli-"));
afterAll(() => rmSync(out, { recursive: true, force: true }));

describe("conclave recipe validate", () => {
  it("accepts every shipped recipe and both document shapes, one line each", async () => {
    expect(SHIPPED.length).toBeGreaterThanOrEqual(4);
    const files = [...SHIPPED, fixture("shorthand")];
    const result = await recipe("validate", ...files);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    const printed = lines(result.stdout);
    expect(printed).toHaveLength(files.length);
    for (const [index, file] of files.entries()) {
      const loaded = loadRecipeFile(file);
      const count = `${loaded.nodes.length} node${loaded.nodes.length === 1 ? "" : "s"}`;
      expect(printed[index]).toBe(`ok ${file}: recipe '${loaded.name}' (${loaded.shape}, ${count})`);
    }
    expect(printed).toContain("ok recipes/approval.yaml: recipe 'approval' (workflow, 5 nodes)");
    expect(printed.some((line) => line.includes("(graph,"))).toBe(true);
    expect(printed).toContain(`ok ${fixture("shorthand")}: recipe 'chain' (graph, 2 nodes)`);
  });

  it("rejects malformed files with one stderr line per issue naming the file and the path, and exits 2", async () => {
    const bad = ["bad-yaml", "unknown-target", "missing-field", "logic", "draft"].map(fixture);
    // A valid file among them is still reported ok; a missing one is an issue of its own.
    const result = await recipe("validate", ...bad, "recipes/triage.yaml", `${FIXTURES}/absent.yaml`);
    expect(result.code).toBe(2);
    expect(lines(result.stdout)).toEqual(["ok recipes/triage.yaml: recipe 'support-triage' (graph, 5 nodes)"]);
    const errors = lines(result.stderr);
    for (const line of errors) expect(line).toMatch(/^test\/fixtures\/recipe-cli\/[\w-]+\.yaml: \S[^:]*: \S/);
    const of = (name: string) => errors.filter((line) => line.startsWith(`${fixture(name)}: `));
    expect(of("bad-yaml")).toHaveLength(1);
    expect(of("bad-yaml")[0]).toMatch(/Flow map/);
    expect(of("unknown-target")).toEqual([
      expect.stringMatching(/: topology\.nodes\[0\]\.agent_ref: 'Not An Id!' is not an agent id/),
      expect.stringMatching(/: topology\.nodes\[1\]: leads to unknown node 'nowhere'/),
    ]);
    expect(of("missing-field")).toEqual([
      expect.stringMatching(/: workflow\.steps\.draft\.agent: /),
      expect.stringMatching(/: workflow\.steps\.decide\.cases: /),
    ]);
    expect(of("logic")).toEqual([expect.stringMatching(/: workflow\.steps\.tally: logic step 'tally' runs host code/)]);
    expect(of("draft")).toEqual([
      expect.stringMatching(/: topology\.nodes\[0\]\.agent_ref: abstract agent reference/),
      expect.stringMatching(/: topology\.nodes\[0\]: leads to unknown node 'summarise'/),
    ]);
    expect(of("absent")).toEqual([`${FIXTURES}/absent.yaml: (file): cannot read: ENOENT`]);
    expect(errors).toHaveLength(9);
  });

  it("--draft checks the document only; --logic-handler makes a logic step runnable; --json prints one object per file", async () => {
    const [draft, logic, other, json] = await Promise.all([
      recipe("validate", "--draft", fixture("draft")),
      recipe("validate", "--logic-handler", "tally", fixture("logic")),
      recipe("validate", "--logic-handler", "other", fixture("logic")),
      recipe("validate", "--json", "recipes/approval.yaml", fixture("unknown-target")),
    ]);
    expect(draft).toMatchObject({ code: 0, stderr: "" });
    expect(draft.stdout).toBe(`ok ${fixture("draft")}: recipe 'sketch' (graph, 1 node)\n`);
    expect(logic).toMatchObject({ code: 0, stderr: "" });
    expect(logic.stdout).toBe(`ok ${fixture("logic")}: recipe 'with-logic' (workflow, 2 nodes)\n`);
    // A handler of another name does not run this step.
    expect(other.code).toBe(2);

    expect(json.code).toBe(2);
    expect(lines(json.stdout).map((line) => JSON.parse(line))).toEqual([
      { file: "recipes/approval.yaml", ok: true, recipe: "approval", shape: "workflow", nodes: 5 },
      {
        file: fixture("unknown-target"),
        ok: false,
        issues: [
          { path: "topology.nodes[0].agent_ref", message: expect.stringContaining("is not an agent id") },
          { path: "topology.nodes[1]", message: expect.stringContaining("unknown node 'nowhere'") },
        ],
      },
    ]);
  });

  it("without a file, or with an unknown flag, is a usage error (exit 2, one line)", async () => {
    const cases = [["validate"], ["validate", "--bogus", "recipes/triage.yaml"], [], ["frobnicate"]];
    const results = await Promise.all(cases.map((args) => recipe(...args)));
    for (const [index, result] of results.entries()) {
      expect({ args: cases[index], code: result.code }).toEqual({ args: cases[index], code: 2 });
      expect(lines(result.stderr)).toHaveLength(1);
    }
  });
});

describe("conclave recipe draw", () => {
  it("draws a recipe's compiled statechart as valid Mermaid naming every node, as conclave graph draws machines", async () => {
    for (const file of ["recipes/approval.yaml", "recipes/research.yaml"]) {
      const result = await recipe("draw", file);
      expect(result).toMatchObject({ code: 0, stderr: "" });
      expect(result.stdout).toBe(renderMachine(compileRecipe(loadRecipeFile(file)), "mermaid"));
      const diagram = readMermaid(result.stdout);
      const labels = [...diagram.states.values()].map((state) => state.label);
      for (const node of loadRecipeFile(file).nodes) expect(labels, `${file}: ${node.id}`).toContain(node.id);
    }
    const approval = readMermaid((await recipe("draw", "recipes/approval.yaml", "--format", "mermaid")).stdout);
    expect([...approval.states.keys()]).toEqual(
      expect.arrayContaining(["run_draft", "run_approve", "run_decide", "run_publish", "run_archive", "suspended"]),
    );
    expect(approval.edges).toContainEqual(expect.objectContaining({ from: "run_approve_working", to: "suspending" }));
  });

  it("draws DOT and JSON, to stdout or --out", async () => {
    const dot = await recipe("draw", "recipes/triage.yaml", "--format", "dot");
    expect(dot).toMatchObject({ code: 0, stderr: "" });
    const graph = readDot(dot.stdout);
    expect(graph.name).toBe("recipe");
    const dotLabels = [...graph.clusters.values(), ...graph.nodes.values()].map(({ attributes }) => attributes.label);
    for (const node of loadRecipeFile("recipes/triage.yaml").nodes) expect(dotLabels).toContain(node.id);

    const path = join(out, "approval.json");
    const written = await recipe("draw", "recipes/approval.yaml", "--format", "json", "--out", path);
    expect(written).toMatchObject({ code: 0, stderr: "" });
    expect(written.stdout).toContain(path);
    expect(JSON.parse(readFileSync(path, "utf8"))).toMatchObject({
      id: "recipe",
      root: { initial: "recipe.starting" },
    });
  });

  it("an invalid file gives the same path-named errors and exit 2; a bad format is a usage error", async () => {
    const invalid = await recipe("draw", fixture("unknown-target"));
    expect(invalid.code).toBe(2);
    expect(invalid.stdout).toBe("");
    expect(lines(invalid.stderr)).toEqual([
      expect.stringMatching(/^test\/fixtures\/recipe-cli\/unknown-target\.yaml: topology\.nodes\[0\]\.agent_ref: /),
      expect.stringMatching(/^test\/fixtures\/recipe-cli\/unknown-target\.yaml: topology\.nodes\[1\]: leads to/),
    ]);
    // A draft cannot be compiled: drawing checks it as for a run.
    expect((await recipe("draw", fixture("draft"))).code).toBe(2);
    expect(await recipe("draw", "--logic-handler", "tally", fixture("logic"))).toMatchObject({ code: 0 });

    const format = await recipe("draw", "recipes/triage.yaml", "--format", "svg");
    expect(format.code).toBe(2);
    expect(format.stderr).toMatch(/unknown format 'svg'; choose mermaid, dot, json/);
  });
});

describe("conclave recipe schema", () => {
  it("prints the JSON Schema of either shape, or of both", async () => {
    const schemas = recipeJsonSchemas();
    const graph = await recipe("schema", "--shape", "graph");
    expect(graph.code).toBe(0);
    expect(JSON.parse(graph.stdout)).toEqual(schemas.graph);
    expect(JSON.parse((await recipe("schema", "--shape", "workflow")).stdout)).toEqual(schemas.workflow);
    const both = JSON.parse((await recipe("schema")).stdout) as { anyOf: { properties: object }[] };
    expect(both.anyOf.map((shape) => Object.keys(shape.properties))).toEqual([
      expect.arrayContaining(["topology"]),
      expect.arrayContaining(["workflow"]),
    ]);
    expect((await recipe("schema", "--shape", "tree")).code).toBe(2);
  });

  it("has help", async () => {
    const help = await recipe("--help");
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/conclave recipe validate FILE\.\.\./);
    expect(help.stdout).toMatch(/Exit status/);
  });
});
