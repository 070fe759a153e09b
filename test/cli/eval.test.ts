/**
 * `conclave eval` and `runEval` in the offline mode, as a user runs them: a
 * 20-case dataset against an agent and a recipe on a runner and a worker
 * hosting the fixture agents; the CLI as a child process for its exit status.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect } from "../../src/client/client.ts";
import { type EvalReport, runEval } from "../../src/client/eval/runEval.ts";
import type { EngineEvent } from "../../src/contracts/events.ts";
import { AGENTS, CASES, OFFLINE_SCORES, RECIPE, scoresOf } from "../fixtures/eval/expected.ts";
import { runConclave } from "../helpers/cli.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";

const nats = useNatsServer();
const processes = useConclaveProcesses(() => nats.url);
const dir = mkdtempSync(join(tmpdir(), "conclave-eval-"));

beforeAll(async () => {
  await processes.spawn("agents", ["worker", "--agents", AGENTS]);
  await processes.spawn("runner", ["runner"]);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("runEval against an agent", () => {
  let report: EvalReport;
  beforeAll(async () => {
    const client = await connect({ nc: await nats.connect("client") });
    const done: number[] = [];
    report = await runEval(
      client,
      readFileSync(CASES, "utf8"),
      { agent: "evals.answerer" },
      {
        runId: "api",
        concurrency: 4,
        onCase: (_, count) => done.push(count),
      },
    );
    expect(done).toEqual(Array.from({ length: 20 }, (_, index) => index + 1));
  });

  it("scores each case, and the aggregate against the default threshold", () => {
    expect(scoresOf(report)).toEqual(OFFLINE_SCORES);
    expect(report).toMatchObject({
      run_id: "api",
      target: "agent:evals.answerer",
      judge: "offline",
      threshold: 0.8,
      cases_passed: 16,
      cases_total: 20,
      passed: true,
    });
    expect(report.score).toBeCloseTo(16.5 / 20);
  });

  it("keeps the reply and why each failing scorer failed", () => {
    const byId = new Map(report.cases.map((one) => [one.id, one]));
    expect(byId.get("sum-1")).toMatchObject({ reply: "5", passed: true, session: "eval-api-sum-1", turn: 1 });
    expect(byId.get("json-sum")?.reply).toBe('{"result":4}');
    expect(byId.get("atlantis")?.scores).toEqual([
      { scorer: "exact", score: 0, passed: false, detail: 'expected "Poseidonia", got "I do not know."' },
    ]);
    expect(byId.get("twenty")?.scores.map((one) => [one.scorer, one.score])).toEqual([
      ["exact", 1],
      ["contains", 0],
    ]);
    expect(byId.get("greet-ada")?.scores[0]).toMatchObject({
      scorer: "llm_judge",
      score: 1,
      detail: "offline: has every term of the rubric (2)",
    });
    expect(byId.get("greet-bob")?.scores[0]).toMatchObject({ scorer: "critics", score: 1, passed: true });
  });

  it("leaves each case's run on the tape, in the session the report names", async () => {
    const client = await connect({ nc: await nats.connect("client") });
    const events: EngineEvent[] = [];
    for await (const { event } of client.events("eval-api-greet-ada")) events.push(event);
    const completed = events.at(-1);
    expect(completed?.kind).toBe("TURN_COMPLETED");
    if (completed?.kind === "TURN_COMPLETED") expect(completed.payload.response).toContain("Hello, Ada!");
    expect(events.some((event) => event.kind === "NODE_COMPLETED" && event.payload.agent === "evals.answerer")).toBe(
      true,
    );
  });
});

describe("conclave eval", () => {
  const reportFile = join(dir, "agent.json");

  it("runs the dataset against an agent: --json prints the report, exit 0 at the threshold", async () => {
    const { code, stdout, stderr } = await runConclave(nats.url, [
      "eval",
      CASES,
      "--agent",
      "evals.answerer",
      "--concurrency",
      "4",
      "--run-id",
      "cliagent",
      "--report",
      reportFile,
      "--json",
    ]);
    expect(stderr.trim().split("\n")).toHaveLength(20);
    expect(stderr).toMatch(/^\[20\/20\] \S+ \d\.\d\d (pass|fail)$/m);
    expect(code).toBe(0);
    const report = JSON.parse(stdout) as EvalReport;
    expect(scoresOf(report)).toEqual(OFFLINE_SCORES);
    expect(report.cases.map((one) => one.session)).toContain("eval-cliagent-capital-peru");
    expect(JSON.parse(readFileSync(reportFile, "utf8"))).toEqual(report);
  });

  it("runs it against a recipe, and exits 1 under --threshold, comparing with the earlier run", async () => {
    const { code, stdout } = await runConclave(nats.url, [
      "eval",
      CASES,
      "--recipe",
      RECIPE,
      "--concurrency",
      "4",
      "--run-id",
      "clirecipe",
      "--threshold",
      "0.9",
      "--compare",
      reportFile,
    ]);
    expect(code).toBe(1);
    expect(stdout).toMatch(/^capital-peru +0\.00 +fail +eval-clirecipe-capital-peru$/m);
    expect(stdout).toMatch(/^ +contains 0\.00: misses "Lima"$/m);
    expect(stdout).toMatch(/^sum-1 +1\.00 +pass +eval-clirecipe-sum-1$/m);
    expect(stdout).toContain("recipe:answer-then-polish, run clirecipe (judge: offline): 16/20 cases passed");
    expect(stdout).toContain("aggregate 0.825, threshold 0.9: FAIL: under the threshold");
    expect(stdout).toContain("compared with run cliagent: 0.825 → 0.825 (+0.00)");
  });

  it("refuses a bad dataset or flags in one line, exit 2, before running anything", async () => {
    const bad = join(dir, "bad.jsonl");
    writeFileSync(bad, '{"input": "What is 1 + 1?"}\n{"input": "x", "scorers": [{"type": "exact", "expected": 3}]}\n');
    const refused = await runConclave(nats.url, ["eval", bad, "--agent", "evals.answerer"]);
    expect(refused).toMatchObject({ code: 2, stdout: "" });
    expect(refused.stderr.trim()).toMatch(/^conclave eval: .*bad\.jsonl, line 2: scorers\.0\.expected: /);
    expect(refused.stderr.trim().split("\n")).toHaveLength(1);
    const both = await runConclave(nats.url, ["eval", CASES, "--agent", "evals.answerer", "--recipe", RECIPE]);
    expect(both.code).toBe(2);
    expect(both.stderr).toContain("give one of --agent ID or --recipe FILE");
    const unknown = await runConclave(nats.url, ["eval", CASES, "--agent", "evals.nobody"]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("no live worker hosts agent 'evals.nobody'");
  });
});
