/**
 * The in-process engine (runRecipeInProcess): a recipe run in this process,
 * without NATS, with the same event log and the same tool governance as on
 * a runner. The test tools count their runs in memory.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { defineAgent } from "../../src/agents/defineAgent.ts";
import type { EngineEvent, EventKind, EventPayload } from "../../src/contracts/events.ts";
import type { JsonObject } from "../../src/contracts/recipeRun.ts";
import { type InProcessOptions, runRecipeInProcess } from "../../src/runtime/inProcess/runRecipeInProcess.ts";
import { caller, echo, planner, relay } from "../fixtures/inprocess/agents.ts";
import { add, note, runsOf, wipe } from "../fixtures/inprocess/tools.ts";

const TOOLS = ["ip_add", "ip_note", "ip_wipe"];

/** A workflow recipe: one step of `agent`, which may call `tools`, under `policy.tools`. */
function recipe(options: { agent?: string; tools?: string[]; policy?: JsonObject } = {}): JsonObject {
  const tools = options.tools ?? TOOLS;
  return {
    apiVersion: "coreason.ai/v2",
    kind: "Recipe",
    metadata: { name: "in-process-tools" },
    policy: { max_retries: 0, ...(options.policy ? { tools: options.policy } : {}) },
    definitions: {
      ...Object.fromEntries(tools.map((tool) => [tool, { type: "tool", id: tool, name: tool }])),
      actor: { type: "agent", id: options.agent ?? "inproc.caller", tools },
    },
    workflow: { start: "act", steps: { act: { type: "agent", agent: "actor" } } },
  };
}

const base = (): InProcessOptions => ({ agents: [caller, planner, echo], tools: [add, note, wipe] });

/** Runs `calls` through inproc.caller; the run must complete. */
async function runCalls(calls: JsonObject[], options: Partial<InProcessOptions> = {}, shape = {}) {
  const result = await runRecipeInProcess(recipe(shape), { ...base(), ...options, inputs: { calls } });
  if (result.status !== "completed") throw new Error(`not completed: ${result.status}`);
  expect(result.outcome.status).toBe("Complete");
  const outcomes = (result.output.act as { outcomes: JsonObject[] }).outcomes;
  return { result, outcomes, events: result.events };
}

const toolKinds = (events: EngineEvent[]) =>
  events.filter((event) => event.kind.startsWith("TOOL_CALL_")).map((event) => event.kind);
const payloadOf = <K extends EventKind>(events: EngineEvent[], kind: K) =>
  events.find((event) => event.kind === kind)?.payload as EventPayload<K> | undefined;

describe("runRecipeInProcess", () => {
  it("records an allowed tool call (requested with arguments redacted, approved, started, finished) and runs it once", async () => {
    const before = runsOf("ip_add");
    const seen: EngineEvent[] = [];
    const { outcomes, events } = await runCalls([{ tool: "ip_add", args: { a: 2, b: 3, note: "ana@example.com" } }], {
      onEvent: (event) => seen.push(event),
    });
    expect(outcomes).toEqual([{ tool: "ip_add", result: { sum: 5 } }]);
    expect(toolKinds(events)).toEqual([
      "TOOL_CALL_REQUESTED",
      "TOOL_CALL_APPROVED",
      "TOOL_CALL_STARTED",
      "TOOL_CALL_FINISHED",
    ]);
    expect(payloadOf(events, "TOOL_CALL_REQUESTED")).toMatchObject({
      call_id: "act.1.1/0",
      tool: "ip_add",
      agent_id: "inproc.caller",
      node: "act",
      args: { a: 2, b: 3, note: "[email]" },
      risk: "safe",
      mode: "live",
    });
    expect(payloadOf(events, "TOOL_CALL_STARTED")).toMatchObject({ idempotency_key: "local.1.act.1.1/0" });
    expect(payloadOf(events, "TOOL_CALL_FINISHED")).toMatchObject({
      ok: true,
      result: { sum: 5 },
      worker: "in-process",
    });
    expect(runsOf("ip_add")).toBe(before + 1);
    // The log: seq contiguous from 0, turn 1, started as a runner starts it, ended by TURN_COMPLETED.
    expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index));
    expect(events.every((event) => event.session_id === "local" && event.turn_id === 1)).toBe(true);
    // The inputs are screened before any agent sees them (the e-mail address is redacted there already).
    expect(events.slice(0, 3).map((event) => event.kind)).toEqual([
      "TURN_STARTED",
      "REQUEST_INTERCEPTED",
      "RECIPE_STARTED",
    ]);
    expect(events.at(-1)?.kind).toBe("TURN_COMPLETED");
    expect(payloadOf(events, "TURN_COMPLETED")?.total_time_ms).toBeGreaterThanOrEqual(0);
    expect(seen).toEqual(events);
  });

  it("records each model round of ctx.tools.run as MODEL_CALL_COMPLETED (the offline model calls the tool named)", async () => {
    const result = await runRecipeInProcess(recipe({ agent: "inproc.planner" }), {
      ...base(),
      inputs: { request: 'Please ip_add {"a": 20, "b": 22}' },
    });
    expect(result.status).toBe("completed");
    if (result.status !== "completed") return;
    expect(result.output.act).toEqual({ answer: 'Done: ip_add: {"sum":42}', calls: 1 });
    const steps = result.events.flatMap((event) => (event.kind === "MODEL_CALL_COMPLETED" ? [event.payload] : []));
    expect(steps.map((step) => [step.call_key, step.index, step.method])).toEqual([
      ["act.1.1", 0, "complete"],
      ["act.1.1", 1, "complete"],
    ]);
    expect(toolKinds(result.events)).toEqual([
      "TOOL_CALL_REQUESTED",
      "TOOL_CALL_APPROVED",
      "TOOL_CALL_STARTED",
      "TOOL_CALL_FINISHED",
    ]);
  });

  it("refuses a call the recipe's policy denies, or the host's, and the tool never runs", async () => {
    const before = runsOf("ip_add");
    const byRecipe = await runCalls(
      [{ tool: "ip_add", args: { a: 1, b: 1 } }],
      {},
      { policy: { tools: { ip_add: "deny" } } },
    );
    expect(byRecipe.outcomes).toEqual([{ tool: "ip_add", refusal: "denied" }]);
    expect(payloadOf(byRecipe.events, "TOOL_CALL_DENIED")).toMatchObject({ refusal: "denied", rule: "tools.ip_add" });
    expect(toolKinds(byRecipe.events)).toEqual(["TOOL_CALL_REQUESTED", "TOOL_CALL_DENIED"]);
    const byHost = await runCalls([{ tool: "ip_add", args: { a: 1, b: 1 } }], { toolPolicy: { default: "deny" } });
    expect(byHost.outcomes).toEqual([{ tool: "ip_add", refusal: "denied" }]);
    expect(payloadOf(byHost.events, "TOOL_CALL_DENIED")).toMatchObject({ refusal: "denied", rule: "default" });
    expect(runsOf("ip_add")).toBe(before);
  });

  it("refuses a critical tool as approval_required: nobody can approve it in-process, and the run goes on", async () => {
    const before = runsOf("ip_wipe");
    const { outcomes, events } = await runCalls([{ tool: "ip_wipe", args: { target: "/" } }]);
    expect(outcomes).toEqual([{ tool: "ip_wipe", refusal: "approval_required" }]);
    expect(payloadOf(events, "TOOL_CALL_DENIED")).toMatchObject({
      refusal: "approval_required",
      rule: "risk: critical",
      message: expect.stringContaining("nobody can approve it here"),
    });
    expect(events.map((event) => event.kind)).not.toContain("HUMAN_INPUT_REQUESTED");
    expect(runsOf("ip_wipe")).toBe(before);
  });

  it("with dryRun, runs a write tool's dryRun and never its run (a read tool runs as usual)", async () => {
    const before = { run: runsOf("ip_note"), dry: runsOf("ip_note", "dryRun") };
    const { outcomes, events } = await runCalls(
      [
        { tool: "ip_note", args: { key: "k", text: "hello" } },
        { tool: "ip_add", args: { a: 1, b: 2 } },
      ],
      { dryRun: true },
    );
    expect(outcomes).toEqual([
      { tool: "ip_note", result: { would_write: "k", bytes: 5 } },
      { tool: "ip_add", result: { sum: 3 } },
    ]);
    const modes = events.flatMap((event) => (event.kind === "TOOL_CALL_REQUESTED" ? [event.payload.mode] : []));
    expect(modes).toEqual(["dry_run", "live"]);
    expect(payloadOf(events, "RECIPE_STARTED")).toMatchObject({ dry_run: true });
    expect(runsOf("ip_note")).toBe(before.run);
    expect(runsOf("ip_note", "dryRun")).toBe(before.dry + 1);
  });

  it("does not offer a tool its node does not list, nor one it lists that is not given", async () => {
    const { outcomes, events } = await runCalls(
      [
        { tool: "ip_note", args: { key: "k", text: "t" } },
        { tool: "ip_add", args: { a: 1, b: 1 } },
      ],
      { tools: [note] },
      { tools: ["ip_add"] },
    );
    expect(outcomes).toEqual([
      { tool: "ip_note", refusal: "unknown_tool" },
      { tool: "ip_add", refusal: "unknown_tool" },
    ]);
    expect(toolKinds(events)).toEqual([]);
  });

  it("runs delegations here too, within max_delegation_depth; one level deeper fails the run", async () => {
    const relayRecipe: JsonObject = {
      apiVersion: "coreason.ai/v2",
      kind: "Recipe",
      metadata: { name: "in-process-relay" },
      policy: { max_retries: 0, tools: { max_delegation_depth: 2 } },
      definitions: { relay: { type: "agent", id: "inproc.relay", delegates: ["relay"] } },
      workflow: { start: "act", steps: { act: { type: "agent", agent: "relay" } } },
    };
    const within = await runRecipeInProcess(relayRecipe, { agents: [relay], inputs: { request: "relay 2" } });
    expect(within.status === "completed" && within.output.act).toEqual({ hops: 2 });
    const delegated = within.events.flatMap((event) =>
      event.kind === "AGENT_DELEGATED" ? [[event.payload.depth, event.payload.ok]] : [],
    );
    expect(delegated).toEqual([
      [2, true],
      [1, true],
    ]);
    const past = await runRecipeInProcess(relayRecipe, { agents: [relay], inputs: { request: "relay 3" } });
    expect(past).toMatchObject({
      status: "completed",
      outcome: { status: "Failed", error: { code: "delegation_depth_exceeded" } },
    });
  });

  it("fails a node whose agent is not given (unknown_agent)", async () => {
    const result = await runRecipeInProcess(recipe(), { agents: [echo] });
    expect(result.status).toBe("completed");
    if (result.status !== "completed") return;
    expect(result.outcome).toMatchObject({ status: "Failed" });
    expect(payloadOf(result.events, "NODE_FAILED")).toMatchObject({ node: "act", code: "unknown_agent" });
  });

  it("stops at a human node: suspended, the log ending with TURN_SUSPENDED", async () => {
    const document: JsonObject = {
      apiVersion: "coreason.ai/v2",
      kind: "Recipe",
      metadata: { name: "in-process-human" },
      workflow: {
        start: "say",
        steps: {
          say: { type: "agent", agent: "inproc.echo", next: "ask" },
          ask: { type: "human", prompt: "Go on?" },
        },
      },
    };
    const result = await runRecipeInProcess(document, { agents: [echo], inputs: { topic: "tides" } });
    expect(result).toMatchObject({ status: "suspended", node: "ask", prompt: "Go on?" });
    expect(result.events.at(-1)?.kind).toBe("TURN_SUSPENDED");
    expect(result.events.map((event) => event.kind)).toEqual(
      expect.arrayContaining(["STREAM_START", "STREAM_CHUNK", "STREAM_END", "HUMAN_INPUT_REQUESTED"]),
    );
  });

  it("ends a run past its budget, Cancelled, stopping the agent", async () => {
    let stopped = false;
    const stuck = defineAgent({
      name: "inproc.stuck",
      description: "Waits until it is stopped.",
      output: z.object({}),
      run: ({ signal }) =>
        new Promise((_, reject) =>
          signal.addEventListener("abort", () => {
            stopped = true;
            reject(new Error("stopped"));
          }),
        ),
    });
    const result = await runRecipeInProcess(recipe({ agent: "inproc.stuck", tools: [] }), {
      agents: [stuck],
      timeoutMs: 200,
    });
    expect(result).toMatchObject({ status: "completed", outcome: { status: "Cancelled" } });
    expect(result.events.at(-1)?.kind).toBe("TURN_COMPLETED");
    expect(stopped).toBe(true);
  });

  it("rejects inputs that do not match interface.inputs before anything runs", async () => {
    const document = { ...recipe(), interface: { inputs: { type: "object", required: ["calls"] } } };
    const events: EngineEvent[] = [];
    await expect(runRecipeInProcess(document, { ...base(), onEvent: (event) => events.push(event) })).rejects.toThrow(
      /inputs do not match interface.inputs/,
    );
    expect(events).toEqual([]);
  });
});
