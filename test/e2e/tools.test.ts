/**
 * Tools under governance, on a real nats-server: a worker process hosts the
 * test tools and agents, a runner (in this process) runs recipes whose
 * agents call them; every call goes through the runner's gate (policy,
 * limits, parallel slots, the log) and the tools count what they ran.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ConclaveClient, connect } from "../../src/client/index.ts";
import type { EngineEvent } from "../../src/contracts/events.ts";
import type { JsonObject } from "../../src/contracts/recipeRun.ts";
import { Runner } from "../../src/runtime/runner/runner.ts";
import { runConclave } from "../helpers/cli.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";
import { turnLog } from "../helpers/turns.ts";
import { until } from "../helpers/wait.ts";

const nats = useNatsServer();
const processes = useConclaveProcesses(() => nats.url);
const toolDir = mkdtempSync(join(tmpdir(), "conclave-tools-"));
let client: ConclaveClient;
let runner: Runner;

beforeAll(async () => {
  await processes.spawn(
    "tools",
    ["worker", "--agents", "./test/fixtures/tools/agents.ts", "--tools", "./test/fixtures/tools/tools.ts"],
    { CONCLAVE_TEST_TOOL_DIR: toolDir },
  );
  runner = await Runner.start(await nats.connect("runner"));
  client = await connect({ nc: await nats.connect("client") });
});
afterAll(async () => {
  await runner?.stop();
});

/** A workflow recipe: one step of `agent`, which may call `tools`, under `policy.tools`. */
function recipe(name: string, options: { agent?: string; tools?: string[]; policy?: JsonObject } = {}): JsonObject {
  const tools = options.tools ?? ["test_add", "test_wait", "test_note", "test_wipe"];
  return {
    apiVersion: "coreason.ai/v2",
    kind: "Recipe",
    metadata: { name },
    ...(options.policy ? { policy: { max_retries: 0, tools: options.policy } } : { policy: { max_retries: 0 } }),
    definitions: {
      ...Object.fromEntries(tools.map((tool) => [tool, { type: "tool", id: tool, name: tool }])),
      actor: { type: "agent", id: options.agent ?? "tester.caller", tools },
    },
    workflow: { start: "act", steps: { act: { type: "agent", agent: "actor" } } },
  };
}

const logOf = (session: string, turnId: number) => turnLog(client, session, turnId);

const conclave = (args: string[]) => runConclave(nats.url, args);

const toolEvents = (events: EngineEvent[]) => events.filter((event) => event.kind.startsWith("TOOL_CALL_"));
const runs = (): Record<string, number> => {
  const file = join(toolDir, "calls.json");
  return existsSync(file) ? (JSON.parse(readFileSync(file, "utf8")) as Record<string, number>) : {};
};
const runsOf = (tool: string) =>
  Object.entries(runs())
    .filter(([key]) => key.startsWith(`${tool} `))
    .reduce((sum, [, count]) => sum + count, 0);

async function runCalls(session: string, calls: JsonObject[], options: Parameters<typeof recipe>[1] = {}, extra = {}) {
  const run = await client.run(session, recipe(session, options), { inputs: { calls, ...extra } });
  expect(run.status).toBe("completed");
  if (run.status !== "completed") throw new Error("not completed");
  return {
    run,
    outcomes: (run.output.act as { outcomes: JsonObject[] }).outcomes,
    events: await logOf(session, run.turnId),
  };
}

describe("an agent's tool call", () => {
  it("runs through the runner: requested (arguments redacted), approved, started, finished, once", async () => {
    const before = runsOf("test_add");
    const { outcomes, events } = await runCalls("tools-allow", [
      { tool: "test_add", args: { a: 2, b: 3, note: "ana@example.com" } },
    ]);
    // The tool's schema strips the unknown field; the result comes back to the agent.
    expect(outcomes).toEqual([{ tool: "test_add", result: { sum: 5 } }]);
    const kinds = toolEvents(events).map((event) => event.kind);
    expect(kinds).toEqual(["TOOL_CALL_REQUESTED", "TOOL_CALL_APPROVED", "TOOL_CALL_STARTED", "TOOL_CALL_FINISHED"]);
    const requested = events.find((event) => event.kind === "TOOL_CALL_REQUESTED");
    expect(requested?.kind === "TOOL_CALL_REQUESTED" && requested.payload).toMatchObject({
      tool: "test_add",
      agent_id: "tester.caller",
      node: "act",
      args: { a: 2, b: 3, note: "[email]" },
      risk: "safe",
      effect: "read",
      mode: "live",
    });
    const finished = events.find((event) => event.kind === "TOOL_CALL_FINISHED");
    expect(finished?.kind === "TOOL_CALL_FINISHED" && finished.payload).toMatchObject({ ok: true, result: { sum: 5 } });
    expect(runsOf("test_add")).toBe(before + 1);
  });

  it("is refused when the recipe's policy denies the tool, and the tool never runs", async () => {
    const before = runsOf("test_add");
    const { outcomes, events } = await runCalls("tools-deny", [{ tool: "test_add", args: { a: 1, b: 1 } }], {
      policy: { tools: { test_add: "deny" } },
    });
    expect(outcomes).toEqual([{ tool: "test_add", refusal: "denied" }]);
    const denied = events.find((event) => event.kind === "TOOL_CALL_DENIED");
    expect(denied?.kind === "TOOL_CALL_DENIED" && denied.payload).toMatchObject({
      refusal: "denied",
      rule: "tools.test_add",
    });
    expect(toolEvents(events).map((event) => event.kind)).not.toContain("TOOL_CALL_STARTED");
    expect(runsOf("test_add")).toBe(before);
  });

  it("is refused for a tool its node does not offer", async () => {
    const { outcomes } = await runCalls("tools-unoffered", [{ tool: "test_note", args: { key: "k", text: "t" } }], {
      tools: ["test_add"],
    });
    expect(outcomes).toEqual([{ tool: "test_note", refusal: "unknown_tool" }]);
  });

  it("passes a write through the confidence gate only above its threshold; reads are not gated", async () => {
    const before = runsOf("test_note");
    const { outcomes, events } = await runCalls(
      "tools-confidence",
      [
        { tool: "test_note", args: { key: "gate", text: "low" }, confidence: 0.5 },
        { tool: "test_note", args: { key: "gate", text: "high" }, confidence: 0.95 },
        { tool: "test_add", args: { a: 1, b: 2 } },
      ],
      { policy: { min_confidence: 0.8, below_confidence: "deny" } },
    );
    expect(outcomes).toEqual([
      { tool: "test_note", refusal: "denied" },
      { tool: "test_note", result: { key: "gate", previous: null } },
      { tool: "test_add", result: { sum: 3 } },
    ]);
    const denied = events.find((event) => event.kind === "TOOL_CALL_DENIED");
    expect(denied?.kind === "TOOL_CALL_DENIED" && denied.payload.rule).toBe("min_confidence");
    expect(runsOf("test_note")).toBe(before + 1);
  });

  it("stops at the turn's call limit", async () => {
    const { outcomes } = await runCalls(
      "tools-limit",
      [1, 2, 3].map((a) => ({ tool: "test_add", args: { a, b: 0 } })),
      { policy: { max_calls_per_turn: 2 } },
    );
    expect(outcomes.map((outcome) => outcome.refusal ?? "ok")).toEqual(["ok", "ok", "limit"]);
  });

  it("of a critical tool waits for a person's approval, durably: answered after a runner restart, it runs once", async () => {
    const session = "tools-approve";
    const before = runsOf("test_wipe");
    const run = await client.run(session, recipe(session), {
      inputs: {
        calls: [
          { tool: "test_add", args: { a: 1, b: 1 } },
          { tool: "test_wipe", args: { target: "db" } },
        ],
      },
    });
    expect(run).toMatchObject({ status: "suspended", node: "act", requiredRole: "operator" });
    expect(run.status === "suspended" && run.prompt).toMatch(/test_wipe.*critical tool/);
    const waiting = await client.status(session, run.turnId);
    expect(waiting?.suspended?.approval).toMatchObject({ tool: "test_wipe", args: { target: "db" } });
    expect(await client.approvals(session)).toEqual([
      expect.objectContaining({
        id: `${session}/${run.turnId}`,
        tool: "test_wipe",
        args: { target: "db" },
        requiredRole: "operator",
        reason: "test_wipe is a critical tool: it needs approval",
      }),
    ]);
    expect(runsOf("test_wipe")).toBe(before);

    // The runner goes away and another takes its place: the approval is in the log and the status, not in a process.
    await runner.stop();
    runner = await Runner.start(await nats.connect("runner"));
    await expect(
      client.resume(session, run.turnId, { input: { approved: true }, userId: "ana", role: "intern" }),
    ).rejects.toThrow(/role 'operator'/);
    await expect(client.resume(session, run.turnId, { input: "yes", userId: "ana", role: "operator" })).rejects.toThrow(
      /approved: true\|false/,
    );
    const done = await client.approve(`${session}/${run.turnId}`, { userId: "ana", reason: "maintenance window" });
    expect(done.status).toBe("completed");
    if (done.status !== "completed") return;
    expect((done.output.act as { outcomes: unknown[] }).outcomes).toEqual([
      { tool: "test_add", result: { sum: 2 } },
      { tool: "test_wipe", result: { wiped: "db" } },
    ]);
    expect(runsOf("test_wipe")).toBe(before + 1);
    expect(await client.approvals(session)).toEqual([]);
    const events = await logOf(session, run.turnId);
    const approved = events.filter(
      (event) => event.kind === "TOOL_CALL_APPROVED" && event.payload.tool === "test_wipe",
    );
    expect(approved.map((event) => event.kind === "TOOL_CALL_APPROVED" && event.payload.rule)).toEqual([
      "approved by ana: maintenance window",
    ]);
    // The first call finished before the suspension: answered from the log, not made again.
    expect(
      events.filter((event) => event.kind === "TOOL_CALL_FINISHED" && event.payload.tool === "test_add"),
    ).toHaveLength(1);
  });

  it("of a critical tool, denied by the approver, is refused and never runs", async () => {
    const session = "tools-deny-approval";
    const before = runsOf("test_wipe");
    const run = await client.run(session, recipe(session), {
      inputs: { calls: [{ tool: "test_wipe", args: { target: "cache" } }] },
    });
    expect(run.status).toBe("suspended");
    // As an operator does it: the list, then the answer, from the command line.
    const listed = await conclave(["approvals", "--session", session]);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toContain(`${session}/${run.turnId}  test_wipe({"target":"cache"})`);
    const denied = await conclave(["deny", `${session}/${run.turnId}`, "--user-id", "bo", "--reason", "not today"]);
    expect(denied.code).toBe(0);
    expect(denied.stdout).toContain("refusal");
    const log = await logOf(session, run.turnId);
    const refused = log.find((event) => event.kind === "TOOL_CALL_DENIED");
    expect(refused?.kind === "TOOL_CALL_DENIED" && refused.payload).toMatchObject({
      refusal: "denied",
      rule: "denied by bo: not today",
    });
    expect(runsOf("test_wipe")).toBe(before);
    const again = await conclave(["approve", `${session}/${run.turnId}`, "--user-id", "bo"]);
    expect(again.code).toBe(2);
    expect(again.stderr.trim().split("\n")).toHaveLength(1);
  });

  it("waits for a free parallel slot: with one slot a session's calls run one at a time", async () => {
    const session = "tools-slots";
    const done = client.run(session, recipe(session, { policy: { parallel_slots: 1 } }), {
      inputs: {
        parallel: true,
        calls: [
          { tool: "test_wait", args: { gate: "slots" } },
          { tool: "test_wait", args: { gate: "slots" } },
        ],
      },
    });
    const started = () => readdirSync(toolDir).filter((file) => file.startsWith("slots.started."));
    await until(async () => started().length === 1, { what: "the first call started" });
    // The second asked at once, but waits for the slot: it has not started while the first runs.
    expect(started()).toHaveLength(1);
    writeFileSync(join(toolDir, "slots.go"), "");
    const run = await done;
    expect(run.status).toBe("completed");
    const kinds = toolEvents(await logOf(session, run.turnId))
      .filter((event) => event.kind === "TOOL_CALL_STARTED" || event.kind === "TOOL_CALL_FINISHED")
      .map((event) => event.kind);
    expect(kinds).toEqual(["TOOL_CALL_STARTED", "TOOL_CALL_FINISHED", "TOOL_CALL_STARTED", "TOOL_CALL_FINISHED"]);
    expect(started()).toHaveLength(2);
  });

  it("of a write tool runs its dry run when the policy says dry_run, and changes nothing", async () => {
    const notes = join(toolDir, "notes.json");
    const before = existsSync(notes) ? readFileSync(notes, "utf8") : null;
    const { outcomes, events } = await runCalls(
      "tools-dry",
      [{ tool: "test_note", args: { key: "k", text: "hello" } }],
      {
        policy: { dry_run: true },
      },
    );
    expect(outcomes).toEqual([{ tool: "test_note", result: { would_write: "k", bytes: 5 } }]);
    const requested = events.find((event) => event.kind === "TOOL_CALL_REQUESTED");
    expect(requested?.kind === "TOOL_CALL_REQUESTED" && requested.payload.mode).toBe("dry_run");
    expect(existsSync(notes) ? readFileSync(notes, "utf8") : null).toBe(before);
  });

  it("of a write tool is undone by a rollback of its turn, last first, once, and the log says so", async () => {
    const notes = join(toolDir, "notes.json");
    writeFileSync(notes, JSON.stringify({ kept: "before" }));
    const { run, outcomes } = await runCalls("tools-rollback", [
      { tool: "test_note", args: { key: "kept", text: "changed" } },
      { tool: "test_note", args: { key: "fresh", text: "new" } },
      { tool: "test_add", args: { a: 1, b: 1 } },
    ]);
    expect(outcomes.map((outcome) => outcome.refusal ?? "ok")).toEqual(["ok", "ok", "ok"]);
    expect(JSON.parse(readFileSync(notes, "utf8"))).toEqual({ kept: "changed", fresh: "new" });

    const rolled = await conclave(["rollback", String(run.turnId), "--session", "tools-rollback"]);
    expect(rolled.code).toBe(0);
    expect(rolled.stdout).toMatch(/rolled back {2}act\.1\.1\/1 {2}test_note\nrolled back {2}act\.1\.1\/0 {2}test_note/);
    expect(JSON.parse(readFileSync(notes, "utf8"))).toEqual({ kept: "before" });
    const events = await logOf("tools-rollback", run.turnId);
    const undone = events.flatMap((event) => (event.kind === "TOOL_CALL_ROLLED_BACK" ? [event.payload] : []));
    expect(undone.map((call) => [call.call_id, call.ok])).toEqual([
      ["act.1.1/1", true],
      ["act.1.1/0", true],
    ]);
    // After the turn's end, contiguous.
    expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index));
    expect(events.findIndex((event) => event.kind === "TURN_COMPLETED")).toBeLessThan(
      events.findIndex((event) => event.kind === "TOOL_CALL_ROLLED_BACK"),
    );
    // Nothing is undone twice.
    expect((await client.rollback("tools-rollback", run.turnId)).calls).toEqual([]);
    await expect(client.rollback("tools-rollback", 99)).rejects.toThrow(/no turn 99/);
  });

  it("delegation: an agent hands work to another within max_delegation_depth; one level deeper is a hard error", async () => {
    const relayRecipe = (session: string): JsonObject => ({
      apiVersion: "coreason.ai/v2",
      kind: "Recipe",
      metadata: { name: session },
      policy: { max_retries: 0, tools: { max_delegation_depth: 2 } },
      definitions: { relay: { type: "agent", id: "tester.relay", delegates: ["relay"] } },
      workflow: { start: "act", steps: { act: { type: "agent", agent: "relay" } } },
    });
    const within = await client.run("tools-delegate", relayRecipe("tools-delegate"), {
      inputs: { request: "relay 2" },
    });
    expect(within.status === "completed" && within.output.act).toEqual({ hops: 2 });
    const delegated = (await logOf("tools-delegate", within.turnId)).flatMap((event) =>
      event.kind === "AGENT_DELEGATED" ? [[event.payload.depth, event.payload.ok]] : [],
    );
    expect(delegated).toEqual([
      [2, true],
      [1, true],
    ]);

    // Three hops: the third is refused, and though every relay swallows the error, the run fails with it.
    const past = await client.run("tools-too-deep", relayRecipe("tools-too-deep"), { inputs: { request: "relay 3" } });
    expect(past.status).toBe("completed");
    if (past.status !== "completed") return;
    expect(past.outcome).toMatchObject({ status: "Failed", error: { code: "delegation_depth_exceeded" } });
    const refused = (await logOf("tools-too-deep", past.turnId)).find(
      (event) => event.kind === "AGENT_DELEGATED" && !event.payload.ok,
    );
    expect(refused?.kind === "AGENT_DELEGATED" && refused.payload).toMatchObject({
      depth: 3,
      error: { code: "delegation_depth_exceeded" },
    });
  });

  it("can be made by the offline model: it calls the tool the request names, and answers with the result", async () => {
    const session = "tools-offline-model";
    const run = await client.run(session, recipe(session, { agent: "tester.planner" }), {
      inputs: { request: 'Please test_add {"a": 20, "b": 22}' },
    });
    expect(run.status).toBe("completed");
    if (run.status !== "completed") return;
    expect(run.output.act).toEqual({ answer: 'Done: test_add: {"sum":42}', calls: 1 });
    const events = await logOf(session, run.turnId);
    const finished = events.find((event) => event.kind === "TOOL_CALL_FINISHED");
    expect(finished?.kind === "TOOL_CALL_FINISHED" && finished.payload.result).toEqual({ sum: 42 });
    // Both model rounds (the call, then the answer) are durable steps of the log.
    const steps = events.flatMap((event) => (event.kind === "MODEL_CALL_COMPLETED" ? [event.payload] : []));
    expect(steps.map((step) => [step.index, step.method])).toEqual([
      [0, "complete"],
      [1, "complete"],
    ]);
  });
});
