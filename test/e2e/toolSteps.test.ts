/**
 * Durable steps, with a model: an agent lets the model (the local
 * OpenAI-compatible server, through the real `openai` client) call three
 * tools one after another. Model calls and tool calls are steps of the
 * turn's log; a runner killed (SIGKILL) while the second tool runs leaves
 * the turn to another, which goes on after the last completed step: no
 * completed model call or tool call is made again.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ConclaveClient, connect } from "../../src/client/index.ts";
import type { JsonObject } from "../../src/contracts/recipeRun.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { type ChatRequestBody, type OpenAIServer, startOpenAIServer } from "../helpers/openaiServer.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";
import { turnLog } from "../helpers/turns.ts";
import { until } from "../helpers/wait.ts";

const nats = useNatsServer();
const processes = useConclaveProcesses(() => nats.url);
const toolDir = mkdtempSync(join(tmpdir(), "conclave-tool-steps-"));
let model: OpenAIServer;
let client: ConclaveClient;

/** The model's plan: after n tool results, the next call (or, after three, the answer). */
const PLAN = [
  { name: "test_add", arguments: '{"a": 1, "b": 2}' },
  { name: "test_wait", arguments: '{"gate": "steps"}' },
  { name: "test_add", arguments: '{"a": 3, "b": 4}' },
];
const toolResults = (body: ChatRequestBody) => body.messages.filter((message) => message.role === "tool").length;

beforeAll(async () => {
  model = await startOpenAIServer((body) => {
    const next = PLAN[toolResults(body)];
    return next ? { toolCalls: [next] } : { content: "three tools ran" };
  });
  await processes.spawn(
    "tools",
    ["worker", "--agents", "./test/fixtures/tools/agents.ts", "--tools", "./test/fixtures/tools/tools.ts"],
    { CONCLAVE_TEST_TOOL_DIR: toolDir, CONCLAVE_LLM_BASE_URL: model.url, CONCLAVE_LLM_MODEL: "scripted-model" },
  );
  client = await connect({ nc: await nats.connect("client") });
});
afterAll(async () => {
  writeFileSync(join(toolDir, "steps.go"), "");
  await model?.stop();
});

const recipe: JsonObject = {
  apiVersion: "coreason.ai/v2",
  kind: "Recipe",
  metadata: { name: "tool-steps" },
  policy: { max_retries: 0 },
  definitions: {
    test_add: { type: "tool", id: "test_add", name: "test_add" },
    test_wait: { type: "tool", id: "test_wait", name: "test_wait" },
    planner: { type: "agent", id: "tester.planner", tools: ["test_add", "test_wait"] },
  },
  workflow: { start: "act", steps: { act: { type: "agent", agent: "planner" } } },
};

const logOf = (session: string, turnId: number) => turnLog(client, session, turnId);

const runs = (): Record<string, number> => {
  const file = join(toolDir, "calls.json");
  return existsSync(file) ? (JSON.parse(readFileSync(file, "utf8")) as Record<string, number>) : {};
};

describe("a turn with three sequential tool calls", () => {
  it("taken over after a kill -9 mid-call, repeats no completed model call or tool call", async () => {
    const first = await processes.spawn("runner-1", ["runner"]);
    const session = "tool-steps";
    let turnId = 0;
    const run = client.run(session, recipe, {
      inputs: { request: "add, wait, add" },
      onEvent: (event) => {
        turnId = event.turn_id;
      },
      timeoutMs: 90_000,
    });

    // The second tool is running (its worker says so), and the first call's end is in the log.
    await until(async () => readdirSync(toolDir).some((file) => file.startsWith("steps.started.")), {
      what: "the wait tool started",
      timeoutMs: 20_000,
    });
    const before = await logOf(session, turnId);
    expect(before.filter((event) => event.kind === "TOOL_CALL_FINISHED")).toHaveLength(1);
    expect(before.filter((event) => event.kind === "MODEL_CALL_COMPLETED")).toHaveLength(2);
    const modelCallsBefore = model.requests.length;
    expect(modelCallsBefore).toBe(2);

    first.child.kill("SIGKILL");
    await new Promise<void>((resolve) => first.child.once("exit", () => resolve()));
    await processes.spawn("runner-2", ["runner"]);
    // The taken-over call of the wait tool is made again (it was in flight), with the same idempotency key.
    await until(
      async () =>
        (await logOf(session, turnId)).filter(
          (event) => event.kind === "TOOL_CALL_STARTED" && event.payload.tool === "test_wait",
        ).length === 2,
      { what: "the wait tool made again by the new runner", timeoutMs: 30_000 },
    );
    writeFileSync(join(toolDir, "steps.go"), "");

    const done = await run;
    expect(done.status).toBe("completed");
    if (done.status !== "completed") return;
    expect(done.output.act).toEqual({ answer: "three tools ran", calls: 3 });

    // The model: two calls before the kill, two after; none made twice.
    expect(model.requests).toHaveLength(4);
    expect(model.requests.map(toolResults)).toEqual([0, 1, 2, 3]);
    // The tools: each completed call ran once; the one in flight ran again under its own key.
    const counts = runs();
    const adds = Object.entries(counts).filter(([key]) => key.startsWith("test_add "));
    expect(adds.map(([, count]) => count)).toEqual([1, 1]);
    const waits = Object.entries(counts).filter(([key]) => key.startsWith("test_wait "));
    expect(waits).toHaveLength(1);
    expect(waits[0]![1]).toBe(2);

    const events = await logOf(session, turnId);
    expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index));
    const steps = events.filter((event) => event.kind === "MODEL_CALL_COMPLETED");
    expect(steps.map((event) => event.kind === "MODEL_CALL_COMPLETED" && event.payload.index)).toEqual([0, 1, 2, 3]);
    const finished = events.filter((event) => event.kind === "TOOL_CALL_FINISHED");
    expect(finished.map((event) => event.kind === "TOOL_CALL_FINISHED" && event.payload.tool)).toEqual([
      "test_add",
      "test_wait",
      "test_add",
    ]);
    expect(events.map((event) => event.kind)).toContain("TURN_RESUMED");
  }, 120_000);
});
