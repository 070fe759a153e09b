/**
 * `conclave serve` as an A2A agent, driven by the A2A SDK's own client over
 * the JSON-RPC binding against a real stack: nats-server, a runner, workers
 * with the built-in agents, the recipe agents and a slow agent (to cancel a
 * task while its turn runs), all processes.
 */
import { type Message, type Part, Role, type StreamResponse, type Task, TaskState } from "@a2a-js/sdk";
import {
  type Client,
  ClientFactory,
  ClientFactoryOptions,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
} from "@a2a-js/sdk/client";
import { beforeAll, describe, expect, it } from "vitest";
import { STAGES } from "../../src/contracts/turn.ts";
import { freePort } from "../../src/nats/server.ts";
import { useGatewayStack } from "../helpers/stack.ts";
import { eventually } from "../helpers/wait.ts";

const stack = useGatewayStack({ recipes: ["triage.yaml", "approval.yaml"] });
let a2a: Client;
let baseUrl: string;

beforeAll(async () => {
  baseUrl = stack.baseUrl;
  a2a = await new ClientFactory().createFromUrl(baseUrl);
});

const text = (value: string): Part => ({
  content: { $case: "text", value },
  metadata: undefined,
  filename: "",
  mediaType: "text/plain",
});
const data = (value: unknown): Part => ({
  content: { $case: "data", value },
  metadata: undefined,
  filename: "",
  mediaType: "application/json",
});

/** A user's message (a new task unless `taskId`). */
function message(parts: Part[], ids: { contextId?: string; taskId?: string; metadata?: Record<string, unknown> } = {}) {
  const sent: Message = {
    messageId: crypto.randomUUID(),
    contextId: ids.contextId ?? "",
    taskId: ids.taskId ?? "",
    role: Role.ROLE_USER,
    parts,
    metadata: ids.metadata,
    extensions: [],
    referenceTaskIds: [],
  };
  return { tenant: "", message: sent, configuration: undefined, metadata: undefined };
}

const textsOf = (parts: Part[] | undefined) =>
  (parts ?? []).flatMap((part) => (part.content?.$case === "text" ? [part.content.value] : []));

/** The Conclave run an input-required task waits for (its status message's data part). */
function waitingRunOf(task: Task): { session_id: string; turn_id: number } {
  const parts = task.status?.message?.parts ?? [];
  const run = parts.flatMap((part) => (part.content?.$case === "data" ? [part.content.value] : []))[0];
  expect(run).toMatchObject({ status: "suspended", session_id: expect.any(String), turn_id: expect.any(Number) });
  return run as { session_id: string; turn_id: number };
}

async function sendForTask(request: ReturnType<typeof message>): Promise<Task> {
  const result = await a2a.sendMessage(request);
  expect("status" in result).toBe(true);
  return result as Task;
}

describe("conclave serve over A2A (JSON-RPC)", () => {
  it("serves an agent card listing converse and each recipe as skills, at the listening address", async () => {
    const response = await fetch(`${baseUrl}/.well-known/agent-card.json`);
    expect(response.status).toBe(200);
    const card = (await response.json()) as {
      name: string;
      skills: { id: string }[];
      supportedInterfaces: { url: string; protocolBinding: string }[];
      capabilities: { streaming: boolean };
    };
    expect(card.name).toBe("Conclave");
    expect(card.skills.map((skill) => skill.id).sort()).toEqual(["approval", "converse", "support-triage"]);
    expect(card.supportedInterfaces).toEqual([
      expect.objectContaining({ url: `${baseUrl}/a2a`, protocolBinding: "JSONRPC" }),
      expect.objectContaining({ url: `${baseUrl}/a2a/rest`, protocolBinding: "HTTP+JSON" }),
    ]);
    expect(card.capabilities.streaming).toBe(true);
  });

  it("a message is a converse turn: completed with the reply; the contextId is the session", async () => {
    const task = await sendForTask(message([text("I'm stressed about my deadline")], { contextId: "a2a-talk" }));
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(task.contextId).toBe("a2a-talk");
    const reply = textsOf(task.artifacts[0]?.parts)[0] ?? "";
    expect(reply.length).toBeGreaterThan(0);
    expect(textsOf(task.status?.message?.parts)).toEqual([reply]);
    const next = await sendForTask(message([text("thanks, that helps")], { contextId: "a2a-talk" }));
    expect(next.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(next.id).not.toBe(task.id);
    // A turn's status is written just after its TURN_COMPLETED: wait for the second's.
    const turns = await eventually(
      () => stack.conclave.turns("a2a-talk"),
      (all) => all.length === 2 && all.every((turn) => turn.status === "done"),
    );
    expect(turns.map((turn) => turn.status)).toEqual(["done", "done"]);
  });

  it("a streamed message: the task, a working update per stage, the reply, completed", async () => {
    const events: StreamResponse[] = [];
    for await (const event of a2a.sendMessageStream(message([text("tell me something kind")]))) events.push(event);
    const cases = events.map((event) => event.payload?.$case);
    expect(cases[0]).toBe("task");
    const working = events.flatMap((event) =>
      event.payload?.$case === "statusUpdate" && event.payload.value.status?.state === TaskState.TASK_STATE_WORKING
        ? textsOf(event.payload.value.status.message?.parts)
        : [],
    );
    // Only stage changes: one line per stage the turn entered, none for agents, stream chunks or the rest.
    expect(working.length).toBeGreaterThan(3);
    expect(working.length).toBeLessThanOrEqual(STAGES.length + 1);
    for (const line of working) expect(line).toMatch(/^stage [a-z_]+$/);
    expect(new Set(working).size).toBe(working.length);
    expect(working).toContain("stage agents");
    expect(cases).toContain("artifactUpdate");
    const last = events.at(-1)?.payload;
    expect(last?.$case).toBe("statusUpdate");
    expect(last?.$case === "statusUpdate" && last.value.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
  });

  it("a recipe skill runs the recipe from a data part and returns its output", async () => {
    const task = await sendForTask(
      message([data({ message: "I was charged twice" })], { metadata: { skill: "support-triage" } }),
    );
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    const output = task.artifacts[0]?.parts[0]?.content;
    expect(output?.$case).toBe("data");
    expect(output?.value).toMatchObject({ status: "completed", output: { triage: { category: "billing" } } });
  });

  it("a run waiting at a human node is input-required; an answer in the same task completes it", async () => {
    const waiting = await sendForTask(message([data({ topic: "our new API" })], { metadata: { skill: "approval" } }));
    expect(waiting.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    const said = textsOf(waiting.status?.message?.parts).join("\n");
    expect(said).toContain("Publish this draft?");
    expect(said).toContain(`send a message in task ${waiting.id}`);
    const ids = { taskId: waiting.id, contextId: waiting.contextId };
    // An answer without the node's role is refused: the task (and the run) still wait.
    const refused = await sendForTask(message([data({ approved: true })], ids));
    expect(refused.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    expect(textsOf(refused.status?.message?.parts).join("\n")).toMatch(/the answer was not taken: .*editor/);
    const done = await sendForTask(
      message([data({ approved: true })], { ...ids, metadata: { role: "editor", user_id: "ana" } }),
    );
    expect(done.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(done.artifacts[0]?.parts[0]?.content?.value).toMatchObject({
      status: "completed",
      outcome: { status: "Complete" },
    });
  });

  it("cancelling an input-required task cancels its waiting run: the task ends canceled, the turn Cancelled", async () => {
    const waiting = await sendForTask(
      message([data({ topic: "a draft nobody wants" })], { metadata: { skill: "approval" } }),
    );
    expect(waiting.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    const run = waitingRunOf(waiting);
    const cancelled = await a2a.cancelTask({ tenant: "", id: waiting.id, metadata: undefined });
    expect(cancelled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    expect(textsOf(cancelled.status?.message?.parts).join("\n")).toContain(
      `run ${run.session_id}/${run.turn_id} cancelled`,
    );
    expect((await a2a.getTask({ tenant: "", id: waiting.id })).status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    expect(await stack.conclave.status(run.session_id, run.turn_id)).toMatchObject({
      status: "done",
      outcome: "Cancelled",
    });
    const ends: unknown[] = [];
    for await (const { event } of stack.conclave.events(run.session_id, { turnId: run.turn_id }))
      if (event.kind === "TURN_COMPLETED") ends.push(event.payload.outcome);
    expect(ends).toEqual([{ status: "Cancelled", reason: "cancelled by the A2A client" }]);
    // Cancelling it again changes nothing.
    expect((await a2a.cancelTask({ tenant: "", id: waiting.id, metadata: undefined })).status?.state).toBe(
      TaskState.TASK_STATE_CANCELED,
    );
  });

  it("cancelling a streaming task cancels its turn: the task and the turn end canceled", async () => {
    const started = await stack.slowAgentStarted("a2a-cancel", 1);
    const events: StreamResponse[] = [];
    const stream = (async () => {
      for await (const event of a2a.sendMessageStream(message([text("slow, please")], { contextId: "a2a-cancel" })))
        events.push(event);
    })();
    await started.seen;
    const taskId = events.find((event) => event.payload?.$case === "task")?.payload?.value as Task | undefined;
    expect(taskId).toBeDefined();
    const cancelled = await a2a.cancelTask({ tenant: "", id: taskId!.id, metadata: undefined });
    expect(cancelled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    await stream;
    const last = events.at(-1)?.payload;
    expect(last?.$case === "statusUpdate" && last.value.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    const status = await eventually(
      () => stack.conclave.status("a2a-cancel", 1),
      (record) => record?.status === "done",
      { timeoutMs: 10_000 },
    );
    expect(status).toMatchObject({ status: "done", outcome: "Cancelled" });
  });

  it("malformed bodies and unknown methods are JSON-RPC errors; the gateway goes on", async () => {
    const post = (body: string, headers: Record<string, string> = {}) =>
      fetch(`${baseUrl}/a2a`, {
        method: "POST",
        headers: { "content-type": "application/json", "a2a-version": "1.0", ...headers },
        body,
      });
    const notJson = await post("{not json");
    expect(notJson.status).toBe(400);
    expect(await notJson.json()).toMatchObject({ jsonrpc: "2.0", error: { code: -32700 }, id: null });
    const batch = await post("[]");
    expect(batch.status).toBe(400);
    expect(await batch.json()).toMatchObject({ error: { code: -32600 } });
    const unknown = await post(JSON.stringify({ jsonrpc: "2.0", id: 7, method: "tasks/nope", params: {} }));
    expect(await unknown.json()).toMatchObject({ id: 7, error: { code: -32601 } });
    const badParams = await post(JSON.stringify({ jsonrpc: "2.0", id: 8, method: "SendMessage", params: 42 }));
    expect(await badParams.json()).toMatchObject({ id: 8, error: { code: -32602 } });
    const noVersion = await post(JSON.stringify({ jsonrpc: "2.0", id: 9, method: "GetTask", params: { id: "x" } }), {
      "a2a-version": "",
    });
    expect(await noVersion.json()).toMatchObject({ id: 9, error: { code: expect.any(Number) } });
    expect((await fetch(`${baseUrl}/.well-known/agent-card.json`, { method: "POST", body: "{" })).status).toBe(405);
    const wrongType = await post("{}", { "content-type": "text/plain" });
    expect(wrongType.status).toBe(415);
    expect((await fetch(`${baseUrl}/a2a`)).status).toBe(405);
    const unknownTask = await post(
      JSON.stringify({ jsonrpc: "2.0", id: 10, method: "GetTask", params: { id: "nope" } }),
    );
    expect(await unknownTask.json()).toMatchObject({ id: 10, error: { code: -32001 } });
    // Still serving.
    expect((await fetch(`${baseUrl}/.well-known/agent-card.json`)).status).toBe(200);
    const task = await sendForTask(message([text("still there?")]));
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
  });

  it("v0.3's method names are served beside v1.0's, with v0.3's params and results", async () => {
    const rpc = async (id: number, method: string, params: unknown) => {
      const response = await fetch(`${baseUrl}/a2a`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ jsonrpc: "2.0", id, method, params }),
      });
      return { status: response.status, type: response.headers.get("content-type") ?? "", text: await response.text() };
    };
    const legacyMessage = (value: string) => ({
      message: {
        kind: "message",
        messageId: crypto.randomUUID(),
        role: "user",
        contextId: "a2a-v03",
        parts: [{ kind: "text", text: value }],
      },
    });
    const sent = await rpc(1, "message/send", legacyMessage("hello from an older client"));
    expect(sent.status).toBe(200);
    const task = JSON.parse(sent.text) as {
      id: number;
      result: { kind: string; id: string; status: { state: string } };
    };
    expect(task).toMatchObject({
      id: 1,
      result: { kind: "task", contextId: "a2a-v03", status: { state: "completed" } },
    });
    const got = JSON.parse((await rpc(2, "tasks/get", { id: task.result.id })).text);
    expect(got).toMatchObject({ id: 2, result: { kind: "task", id: task.result.id, status: { state: "completed" } } });
    const streamed = await rpc(3, "message/stream", legacyMessage("and streamed"));
    expect(streamed.type).toMatch(/^text\/event-stream/);
    const events = streamed.text
      .split("\n")
      .filter((line) => line.startsWith("data: "))
      .map((line) => JSON.parse(line.slice(6)) as { id: number; result: { kind: string; status?: { state: string } } });
    expect(events.every((event) => event.id === 3)).toBe(true);
    expect(events.at(-1)?.result).toMatchObject({ kind: "status-update", status: { state: "completed" } });
    // An unknown task is the same JSON-RPC error under v0.3's names.
    expect(JSON.parse((await rpc(4, "tasks/get", { id: "nope" })).text)).toMatchObject({
      id: 4,
      error: { code: -32001 },
    });
  });

  it("the HTTP+JSON binding: send, stream, get and cancel with the SDK's REST transport", async () => {
    const rest = await new ClientFactory(
      ClientFactoryOptions.createFrom(ClientFactoryOptions.default, { preferredTransports: ["HTTP+JSON"] }),
    ).createFromUrl(baseUrl);
    const task = (await rest.sendMessage(message([text("hello over REST")]))) as Task;
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(textsOf(task.artifacts[0]?.parts)[0]?.length).toBeGreaterThan(0);
    expect((await rest.getTask({ tenant: "", id: task.id })).status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    const waiting = (await rest.sendMessage(
      message([data({ topic: "REST" })], { metadata: { skill: "approval" } }),
    )) as Task;
    expect(waiting.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    // Its waiting run is cancelled in Conclave, and the task ends canceled.
    const run = waitingRunOf(waiting);
    expect((await rest.cancelTask({ tenant: "", id: waiting.id, metadata: undefined })).status?.state).toBe(
      TaskState.TASK_STATE_CANCELED,
    );
    expect((await rest.getTask({ tenant: "", id: waiting.id })).status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    expect(await stack.conclave.status(run.session_id, run.turn_id)).toMatchObject({ outcome: "Cancelled" });
    const streamed: (string | undefined)[] = [];
    for await (const event of rest.sendMessageStream(message([text("stream over REST")])))
      streamed.push(event.payload?.$case);
    expect(streamed[0]).toBe("task");
    expect(streamed).toContain("artifactUpdate");
    // Malformed requests: REST error bodies, and the gateway goes on.
    const notJson = await fetch(`${baseUrl}/a2a/rest/message:send`, {
      method: "POST",
      headers: { "content-type": "application/json", "a2a-version": "1.0" },
      body: "{nope",
    });
    expect(notJson.status).toBe(400);
    expect(await notJson.json()).toMatchObject({ error: { code: 400, message: expect.stringMatching(/not JSON/) } });
    const noMessage = await fetch(`${baseUrl}/a2a/rest/message:send`, {
      method: "POST",
      headers: { "content-type": "application/json", "a2a-version": "1.0" },
      body: "{}",
    });
    expect(noMessage.status).toBe(400);
    const unknownTask = await fetch(`${baseUrl}/a2a/rest/tasks/nope`, { headers: { "a2a-version": "1.0" } });
    expect(unknownTask.status).toBe(404);
    const nowhere = await fetch(`${baseUrl}/a2a/rest/elsewhere`, { headers: { "a2a-version": "1.0" } });
    expect(nowhere.status).toBe(404);
    expect((await fetch(`${baseUrl}/.well-known/agent-card.json`)).status).toBe(200);
  });

  it("with a token, the card and the tasks need it; the card names the bearer scheme", async () => {
    const token = "a2a-test-token-0123456789";
    const port = await freePort();
    await stack.processes.spawn("gateway-token", ["serve", "--port", String(port)], { CONCLAVE_GATEWAY_TOKEN: token });
    const url = `http://127.0.0.1:${port}`;
    const refused = await fetch(`${url}/.well-known/agent-card.json`);
    expect(refused.status).toBe(401);
    expect(await refused.json()).toMatchObject({ error: { code: "unauthorized" } });
    const withToken: typeof fetch = (input, init) => {
      const headers = new Headers(init?.headers);
      headers.set("authorization", `Bearer ${token}`);
      return fetch(input, { ...init, headers });
    };
    const card = (await (await withToken(`${url}/.well-known/agent-card.json`)).json()) as {
      securitySchemes: Record<string, unknown>;
    };
    expect(card.securitySchemes).toEqual({
      bearer: { httpAuthSecurityScheme: expect.objectContaining({ scheme: "Bearer" }) },
    });
    const client = await new ClientFactory(
      ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
        transports: [new JsonRpcTransportFactory({ fetchImpl: withToken })],
        cardResolver: new DefaultAgentCardResolver({ fetchImpl: withToken }),
      }),
    ).createFromUrl(url);
    const task = (await client.sendMessage(message([text("hello with a token")]))) as Task;
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
  });
});
