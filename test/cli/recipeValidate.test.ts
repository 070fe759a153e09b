/**
 * `conclave recipe validate` as a user runs it (a child process) on the
 * realistic documents of test/fixtures/recipe-validate: a published graph recipe, a
 * workflow manifest with a logic step, a draft sketch and a YAML syntax error.
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { CONCLAVE_BIN } from "../../src/cli/childProcess.ts";

/** `conclave recipe validate …`: its exit status and output. */
const validate = (...args: string[]) =>
  promisify(execFile)(process.execPath, [CONCLAVE_BIN, "recipe", "validate", ...args], {
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
const fixture = (name: string) => `test/fixtures/recipe-validate/${name}`;
const GRAPH = fixture("graph-support.yaml");
const WORKFLOW = fixture("workflow-release.yaml");
const DRAFT = fixture("draft-sketch.yaml");
const BROKEN = fixture("syntax-error.yaml");

describe("conclave recipe validate", () => {
  it("prints ok per valid file, one stderr line per issue of the others, and exits 2", async () => {
    const result = await validate(GRAPH, WORKFLOW, DRAFT, BROKEN);
    expect(result.code).toBe(2);
    expect(lines(result.stdout)).toEqual([`ok ${GRAPH}: recipe 'support-reply' (graph, 7 nodes)`]);
    expect(lines(result.stderr)).toEqual([
      expect.stringMatching(
        new RegExp(`^${WORKFLOW}: workflow\\.steps\\.count: logic step 'count' runs host code; .*'count'`),
      ),
      `${DRAFT}: topology.nodes[0].agent_ref: abstract agent reference (intent 'find sources on the topic') must be resolved to an agent id before the recipe runs`,
      `${DRAFT}: topology.entry_point: unknown node 'start' (nodes: research, summarise)`,
      `${DRAFT}: topology.nodes[1]: leads to unknown node 'review' (nodes: research, summarise)`,
      expect.stringMatching(new RegExp(`^${BROKEN}: line 7, column 3: Flow map`)),
    ]);
  });

  it("--logic-handler makes a logic step runnable, --draft checks a draft's document only, --json prints objects", async () => {
    const result = await validate("--json", "--draft", "--logic-handler", "count", WORKFLOW, DRAFT, GRAPH);
    expect(result).toMatchObject({ code: 0, stderr: "" });
    expect(lines(result.stdout).map((line) => JSON.parse(line))).toEqual([
      { file: WORKFLOW, ok: true, recipe: "release-notes", shape: "workflow", nodes: 6 },
      { file: DRAFT, ok: true, recipe: "sketch", shape: "graph", nodes: 2 },
      { file: GRAPH, ok: true, recipe: "support-reply", shape: "graph", nodes: 7 },
    ]);
    // To run, the workflow needs only its handler.
    const runnable = await validate("--logic-handler", "count", WORKFLOW);
    expect(runnable).toMatchObject({ code: 0, stderr: "" });
    expect(runnable.stdout).toBe(`ok ${WORKFLOW}: recipe 'release-notes' (workflow, 6 nodes)\n`);
  });
});
