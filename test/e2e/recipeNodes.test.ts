/**
 * Node kinds and policy fields of recipes, run by a runner (in this
 * process, with a logic handler registered) and a worker process hosting
 * the agents, on a real nats-server.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ConclaveClient, connect } from "../../src/client/index.ts";
import type { EngineEvent } from "../../src/contracts/events.ts";
import type { JsonObject } from "../../src/contracts/recipeRun.ts";
import { Runner } from "../../src/runtime/runner/runner.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";

const nats = useNatsServer();
const processes = useConclaveProcesses(() => nats.url);
let client: ConclaveClient;
let runner: Runner;

beforeAll(async () => {
  await processes.spawn("agents", [
    "worker",
    "--agents",
    "./agents/recipes/index.ts,./test/fixtures/recipe-nodes/agents.ts,./test/fixtures/takeover/holdOnce.ts",
  ]);
  runner = await Runner.start(await nats.connect("runner"), {
    recipes: {
      logicHandlers: {
        // An operator's code for a workflow `logic` step: words in the draft.
        count_words: ({ blackboard }) => String((blackboard.draft as { text: string }).text).split(/\s+/).length,
      },
    },
  });
  client = await connect({ nc: await nats.connect("client") });
});
afterAll(async () => {
  await runner?.stop();
});

const graph = (name: string, rest: JsonObject): JsonObject => ({
  apiVersion: "coreason.ai/v2",
  kind: "Recipe",
  metadata: { name },
  ...rest,
});
const workflow = (name: string, steps: JsonObject, rest: JsonObject = {}): JsonObject => ({
  apiVersion: "coreason.ai/v2",
  kind: "Recipe",
  metadata: { name },
  workflow: { steps },
  ...rest,
});

async function run(session: string, document: JsonObject, inputs: JsonObject = {}) {
  const events: EngineEvent[] = [];
  const result = await client.run(session, document, { inputs, onEvent: (event) => events.push(event) });
  if (result.status !== "completed") throw new Error(`run ${session} suspended at ${result.node}`);
  return { ...result, events };
}
const nodesStarted = (events: EngineEvent[]) =>
  events.flatMap((event) => (event.kind === "NODE_STARTED" ? [event.payload.node] : []));

describe("recipe nodes, on a runner and a worker", () => {
  it("council: voters answer over NATS, majority decides, a switch routes on the decision", async () => {
    const document = workflow("vote", {
      ballot: {
        type: "council",
        voters: ["vote.ayes", "vote.also_ayes", "vote.nays"],
        strategy: "majority",
        next: "decide",
      },
      unanimous: { type: "council", voters: ["vote.ayes", "vote.nays"], strategy: "consensus" },
      decide: { type: "switch", cases: { "ballot.decision == 'yes'": "unanimous" }, default: "write" },
      write: { type: "agent", agent: "content.writer" },
    });
    (document.workflow as JsonObject).start = "ballot";
    const { outcome, output, events } = await run("nodes-council", document);
    expect(outcome).toEqual({ status: "Complete" });
    expect(output.ballot).toEqual({
      decision: "yes",
      votes: { "vote.ayes": "yes", "vote.also_ayes": "yes", "vote.nays": "no" },
      failed: [],
    });
    expect(output.unanimous).toMatchObject({ decision: null });
    expect(nodesStarted(events)).toEqual(["ballot", "decide", "unanimous"]);
  });

  it("logic: the operator's registered handler runs; the document's code never does", async () => {
    const document = workflow("logic", {
      write: {
        type: "agent",
        agent: "content.writer",
        inputs: { topic: "topic" },
        output_key: "draft",
        next: "count_words",
      },
      count_words: { type: "logic", code: "globalThis.pwned = true; return 0", next: "end" },
      end: { type: "agent", agent: "ops.archiver" },
    });
    const { output } = await run("nodes-logic", document, { topic: "Bees" });
    expect(output.count_words).toBe(3);
    expect((globalThis as { pwned?: boolean }).pwned).toBeUndefined();
    // A logic step whose handler this runner does not have is refused before anything runs.
    const unknown = workflow("logic-unknown", { other: { type: "logic", code: "x" } });
    await expect(client.run("nodes-logic-2", unknown)).rejects.toThrow(/workflow\.steps\.other.*register a handler/);
  });

  it("policy.max_retries: a failed node is tried again; without retries the run fails naming it", async () => {
    const flaky = (retries: number) =>
      graph("flaky", {
        policy: { max_retries: retries },
        topology: [{ type: "agent", id: "try", agent_ref: "test.flaky" }],
      });
    const retried = await run("nodes-retry-1", flaky(1));
    expect(retried.outcome).toEqual({ status: "Complete" });
    expect(retried.output.try).toEqual({ attempt: 2 });
    const failed = retried.events.find((event) => event.kind === "NODE_FAILED");
    expect(failed?.kind === "NODE_FAILED" && failed.payload).toMatchObject({ node: "try", retrying: true, attempt: 1 });
    const once = await run("nodes-retry-2", flaky(0));
    expect(once.outcome).toMatchObject({
      status: "Failed",
      error: { message: expect.stringMatching(/node 'try' failed after 1 attempt/) },
    });
  });

  it("policy.timeout_seconds: the deadline passes mid-node, the node is cancelled, the run ends Failed timeout", async () => {
    const document = graph("slow", {
      policy: { timeout_seconds: 1 },
      topology: [
        { type: "agent", id: "hold", agent_ref: "test.hold" },
        { type: "agent", id: "after", agent_ref: "ops.archiver" },
      ],
    });
    const { outcome, events } = await run("nodes-timeout", document);
    expect(outcome).toMatchObject({ status: "Failed", error: { code: "timeout" } });
    expect(nodesStarted(events)).toEqual(["hold"]);
    expect(events.some((event) => event.kind === "NODE_COMPLETED")).toBe(false);
  });

  it("policy.max_steps: a cycle stops", async () => {
    const document = graph("loop", {
      policy: { max_steps: 4 },
      topology: {
        nodes: [
          { type: "agent", id: "write", agent_ref: "content.writer", output_key: "draft" },
          { type: "router", id: "again", input_key: "always", routes: {}, default_route: "write" },
        ],
        edges: [{ source: "write", target: "again" }],
      },
    });
    const { outcome, events } = await run("nodes-steps", document);
    expect(outcome).toMatchObject({ status: "Failed", error: { code: "max_steps" } });
    expect(nodesStarted(events)).toEqual(["write", "again", "write", "again"]);
  });

  it("policy.execution_mode sequential: a fork's branches run one after the other", async () => {
    const document = graph("fork", {
      policy: { execution_mode: "sequential" },
      topology: {
        nodes: [
          {
            type: "agent",
            id: "plan",
            agent_ref: "research.planner",
            inputs_map: { question: "q" },
            output_key: "plan",
          },
          { type: "agent", id: "web", agent_ref: "research.web", inputs_map: { query: "plan.web" } },
          { type: "agent", id: "papers", agent_ref: "research.papers", inputs_map: { query: "plan.papers" } },
          { type: "agent", id: "sum", agent_ref: "research.summarizer", inputs_map: { web: "web", papers: "papers" } },
        ],
        edges: [
          { source: "plan", target: "web" },
          { source: "plan", target: "papers" },
          { source: "web", target: "sum" },
          { source: "papers", target: "sum" },
        ],
      },
    });
    const { outcome, events } = await run("nodes-sequential", document, { q: "tides" });
    expect(outcome).toEqual({ status: "Complete" });
    const order = events.flatMap((event) =>
      event.kind === "NODE_STARTED" || event.kind === "NODE_COMPLETED"
        ? [`${event.kind === "NODE_STARTED" ? "+" : "-"}${event.payload.node}`]
        : [],
    );
    expect(order).toEqual(["+plan", "-plan", "+web", "-web", "+papers", "-papers", "+sum", "-sum"]);
  });

  it("checks the final blackboard against interface.outputs", async () => {
    const document = graph("outputs", {
      interface: { outputs: { type: "object", required: ["verdict"] } },
      topology: [{ type: "agent", id: "write", agent_ref: "content.writer" }],
    });
    const { outcome } = await run("nodes-outputs", document);
    expect(outcome).toMatchObject({
      status: "Failed",
      error: { code: "invalid_output", message: expect.stringMatching(/verdict/) },
    });
  });

  it("pre-flight: a failing required constraint ends the run before any node; an optional one warns", async () => {
    const document = graph("preflight", {
      requirements: [
        { variable: "rows", operator: "gte", value: 10, error_message: "need at least 10 rows" },
        { variable: "tags", operator: "contains", value: "urgent", required: false },
      ],
      topology: [{ type: "agent", id: "write", agent_ref: "content.writer" }],
    });
    const refused = await run("nodes-preflight-1", document, { rows: 3, tags: ["later"] });
    expect(refused.outcome).toEqual({
      status: "Failed",
      error: { code: "preflight_failed", message: "need at least 10 rows" },
    });
    expect(nodesStarted(refused.events)).toEqual([]);
    const warned = await run("nodes-preflight-2", document, { rows: 12, tags: ["later"] });
    expect(warned.outcome).toMatchObject({
      status: "PartialSuccess",
      warnings: [{ stage: "recipe", code: "constraint" }],
    });
  });

  it("pre-flight: every operator, holding and not, on the run's inputs", async () => {
    const inputs = { n: 5, name: "ada", tags: ["a", "b"], data: { rows: 12 } };
    const cases: [string, unknown, unknown][] = [
      ["eq", "name", "ada"],
      ["neq", "name", "bob"],
      ["gt", "n", 4],
      ["gte", "n", 5],
      ["lt", "n", 6],
      ["lte", "data.rows", 12],
      ["in", "name", ["ada", "bob"]],
      ["contains", "tags", "b"],
    ];
    const failing: Record<string, unknown> = {
      eq: "bob",
      neq: "ada",
      gt: 5,
      gte: 6,
      lt: 5,
      lte: 11,
      in: ["bob"],
      contains: "c",
    };
    const recipe = (operator: string, variable: string, value: unknown) =>
      graph(`preflight-${operator}`, {
        requirements: [{ variable, operator, value }],
        topology: [{ type: "agent", id: "archive", agent_ref: "ops.archiver" }],
      });
    for (const [operator, variable, value] of cases) {
      const holds = await run(`nodes-op-${operator}-1`, recipe(operator, variable as string, value), inputs);
      expect(holds.outcome, operator).toEqual({ status: "Complete" });
      const fails = await run(
        `nodes-op-${operator}-2`,
        recipe(operator, variable as string, failing[operator]),
        inputs,
      );
      expect(fails.outcome, operator).toMatchObject({
        status: "Failed",
        error: { code: "preflight_failed", message: expect.stringContaining(`is not ${operator}`) },
      });
      expect(nodesStarted(fails.events), operator).toEqual([]);
    }
    // A path that does not resolve fails; a type mismatch fails rather than erroring.
    const missing = await run("nodes-op-missing", recipe("eq", "data.columns", 3), inputs);
    expect(missing.outcome).toMatchObject({ status: "Failed", error: { message: "data.columns is not set" } });
    const mismatch = await run("nodes-op-mismatch", recipe("gt", "name", 3), inputs);
    expect(mismatch.outcome).toMatchObject({ status: "Failed", error: { code: "preflight_failed" } });
  });

  it("policy.human_in_the_loop: every agent node's result waits for an approval; a rejection fails the run", async () => {
    const document = graph("hitl", {
      policy: { human_in_the_loop: true },
      topology: [
        {
          type: "agent",
          id: "write",
          agent_ref: "content.writer",
          inputs_map: { topic: "topic" },
          output_key: "draft",
        },
        { type: "agent", id: "publish", agent_ref: "ops.publisher", inputs_map: { draft: "draft" } },
      ],
    });
    const first = await client.run("nodes-hitl", document, { inputs: { topic: "Kites" } });
    expect(first).toMatchObject({ status: "suspended", node: "write_approval" });
    const second = await client.resume("nodes-hitl", first.turnId, { input: { approved: true }, userId: "ana" });
    expect(second).toMatchObject({ status: "suspended", node: "publish_approval" });
    const last = await client.resume("nodes-hitl", first.turnId, { input: "no", userId: "ana" });
    expect(last).toMatchObject({
      status: "completed",
      outcome: { status: "Failed", error: { code: "rejected", message: "'publish_approval': rejected by ana" } },
    });
  });

  it("is cancelled like any turn: the running node stops and the run ends Cancelled", async () => {
    const document = graph("cancel", { topology: [{ type: "agent", id: "hold", agent_ref: "test.hold" }] });
    const observer = await nats.connect("observer");
    const holding = observer.subscribe("conclave.inspect.hold.nodes-cancel.>", { max: 1 });
    const running = client.run("nodes-cancel", document);
    for await (const _ of holding) break;
    await client.cancel("nodes-cancel", 1, "not needed");
    const result = await running;
    expect(result.status === "completed" && result.outcome).toEqual({ status: "Cancelled", reason: "not needed" });
  });
});
