/**
 * `verify` on a real nats-server with a runner and workers (offline model):
 * a healthy session passes every check with its evidence, through the client
 * API and `conclave verify` (readable and --json); after the log is tampered
 * with (a bogus event published as the runner, leaving a gap in a turn's
 * seqs), the contiguity check fails with the gap as evidence and the command
 * exits 1.
 */
import { jetstream } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { encodeJson } from "../../src/bus/codec.ts";
import { subjects } from "../../src/bus/subjects.ts";
import { type ConclaveClient, connect, type VerifyReport } from "../../src/client/index.ts";
import { DEFAULT_EVENT_STREAMS } from "../../src/eventlog/eventStreams.ts";
import { runConclave } from "../helpers/cli.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";

const SESSION = "verify-1";
const nats = useNatsServer();
const processes = useConclaveProcesses(() => nats.url);
let client: ConclaveClient;

const RECIPE = {
  apiVersion: "coreason.ai/v2",
  kind: "Recipe",
  metadata: { name: "verified" },
  interface: { outputs: { type: "object", required: ["draft"] } },
  definitions: { writer: { type: "agent", id: "content.writer" } },
  workflow: { start: "write", steps: { write: { type: "agent", agent: "writer", output_key: "draft" } } },
};

beforeAll(async () => {
  await processes.spawn("worker", ["worker", "--agents", "*", "--services", "scheduler,council,critics,memory"]);
  await processes.spawn("recipe-agents", ["worker", "--agents", "./agents/recipes/index.ts"]);
  await processes.spawn("runner", ["runner"]);
  client = await connect({ nc: await nats.connect("client") });
  await client.submit(SESSION, "I'm stressed about my deadline tomorrow").result;
  await client.submit(SESSION, "Thanks, that helps").result;
  expect((await client.run(SESSION, RECIPE, { inputs: { topic: "checks" } })).status).toBe("completed");
}, 120_000);
afterAll(async () => {
  await client?.close();
});

const check = (report: VerifyReport, name: string) => report.checks.find((found) => found.name === name);

describe("verify on a healthy session", () => {
  it("passes every check through the client, with evidence; the state replay is left to the runner role", async () => {
    const report = await client.verify(SESSION, "full");
    expect(report).toMatchObject({ session_id: SESSION, level: "full", ok: true });
    expect(report.checks.map((found) => found.name)).toEqual([
      "log_contiguity",
      "recipe_outputs",
      "ledgers",
      "replay_state",
    ]);
    expect(check(report, "log_contiguity")?.evidence[0]).toMatch(
      /stored messages, 3 turns, 3 with their terminal event$/,
    );
    expect(check(report, "recipe_outputs")?.evidence).toEqual([
      "1 recipe run output(s) checked against interface.outputs",
    ]);
    expect(check(report, "replay_state")).toMatchObject({ ok: true, skipped: true });
    const quick = await client.verify(SESSION, "quick");
    expect(quick.checks.map((found) => found.name)).toEqual(["log_contiguity"]);
  });

  it("`conclave verify` runs them all, the state replay too, readable and as JSON", async () => {
    const readable = await runConclave(nats.url, ["verify", SESSION]);
    expect(readable.code, readable.stderr).toBe(0);
    expect(readable.stdout).toContain(`session ${SESSION}: full verification passed`);
    for (const name of ["log_contiguity", "recipe_outputs", "ledgers", "replay_state"])
      expect(readable.stdout).toContain(`✔ ${name}\n`);
    expect(readable.stdout).toContain("matches the stored state");
    const json = await runConclave(nats.url, ["verify", SESSION, "--level", "quick", "--json"]);
    expect(json.code, json.stderr).toBe(0);
    const report = JSON.parse(json.stdout) as VerifyReport;
    expect(report).toMatchObject({ ok: true, level: "quick", checks: [{ name: "log_contiguity", ok: true }] });
    const bad = await runConclave(nats.url, ["verify", SESSION, "--level", "deep"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("--level must be one of quick, full");
  });
});

describe("verify after the log is tampered with", () => {
  beforeAll(async () => {
    // Test-only: a bogus event with a gap, published on the turn's subject with the runner's rights.
    const js = jetstream(await nats.connect("runner"));
    await js.publish(
      subjects.turnEvents(SESSION, 2, DEFAULT_EVENT_STREAMS),
      encodeJson({
        session_id: SESSION,
        turn_id: 2,
        seq: 500,
        ts_monotonic: 1,
        kind: "WAVE_STARTED",
        payload: { wave: 9, agent_count: 0, agents: [] },
      }),
    );
  });

  it("fails the contiguity check with the gap as evidence", async () => {
    const report = await client.verify(SESSION, "quick");
    expect(report.ok).toBe(false);
    const contiguity = check(report, "log_contiguity");
    expect(contiguity?.ok).toBe(false);
    expect(contiguity?.evidence.join("\n")).toMatch(/turn 2: seq gap, \d+ missing \(\d+/);
    expect(contiguity?.evidence.join("\n")).toMatch(
      /turn 2: 1 event\(s\) after its TURN_COMPLETED \(seq \d+\): WAVE_STARTED@500/,
    );
  });

  it("`conclave verify` shows the failure and exits 1", async () => {
    const result = await runConclave(nats.url, ["verify", SESSION, "--level", "quick"]);
    expect(result.code).toBe(1);
    expect(result.stdout).toContain(`session ${SESSION}: quick verification FAILED`);
    expect(result.stdout).toContain("✗ log_contiguity");
    expect(result.stdout).toContain("turn 2: seq gap");
  });
});
