/**
 * A2A delegation on a real nats-server: a worker process hosts `tester.asker`,
 * a runner (in this process) runs recipes whose agent delegates to a remote
 * A2A agent that this test serves with the SDK's server side (an executor
 * answering "echo: <text>") on a free port of 127.0.0.1, which the operator's
 * allowlist names (CONCLAVE_A2A_ALLOW=127.0.0.1: loopback is refused unless an
 * entry names it).
 */
import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { AgentCard, type Part, Role, TaskState } from "@a2a-js/sdk";
import {
  AgentEvent,
  type AgentExecutor,
  DefaultRequestHandler,
  defaultServerCallContextBuilder,
  InMemoryTaskStore,
  JsonRpcTransportHandler,
  UnauthenticatedUser,
} from "@a2a-js/sdk/server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ConclaveClient, connect } from "../../src/client/index.ts";
import type { EngineEvent } from "../../src/contracts/events.ts";
import type { JsonObject } from "../../src/contracts/recipeRun.ts";
import { freePort } from "../../src/nats/server.ts";
import { loadRecipe } from "../../src/recipes/load.ts";
import { Runner } from "../../src/runtime/runner/runner.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";
import { turnLog } from "../helpers/turns.ts";

const nats = useNatsServer();
const processes = useConclaveProcesses(() => nats.url);
let client: ConclaveClient;
let runner: Runner;
let server: Server;
let baseUrl: string;
/** Messages the remote agent was sent. */
const received: string[] = [];

const text = (value: string): Part => ({
  content: { $case: "text", value },
  metadata: undefined,
  filename: "",
  mediaType: "text/plain",
});

/** Answers "echo: <text>" as a message; "need input" puts its task in input-required. */
const echo: AgentExecutor = {
  async execute(context, bus) {
    const said = context.userMessage.parts
      .flatMap((part) => (part.content?.$case === "text" ? [part.content.value] : []))
      .join("");
    received.push(said);
    const ids = { taskId: context.taskId, contextId: context.contextId };
    const reply = (parts: Part[]) => ({
      messageId: randomUUID(),
      ...ids,
      role: Role.ROLE_AGENT,
      parts,
      metadata: undefined,
      extensions: [],
      referenceTaskIds: [],
    });
    if (said.startsWith("need input")) {
      const status = { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: new Date().toISOString() };
      bus.publish(AgentEvent.task({ id: ids.taskId, ...ids, status, artifacts: [], history: [], metadata: undefined }));
      bus.publish(
        AgentEvent.statusUpdate({
          ...ids,
          status: {
            state: TaskState.TASK_STATE_INPUT_REQUIRED,
            message: reply([text("which city?")]),
            timestamp: new Date().toISOString(),
          },
          metadata: undefined,
        }),
      );
    } else bus.publish(AgentEvent.message(reply([text(`echo: ${said}`)])));
    bus.finished();
  },
  async cancelTask() {},
};

/** The remote agent's card, pointing at `url`'s JSON-RPC binding. */
function cardAt(url: string): AgentCard {
  return {
    name: "Echo",
    description: "Says back what it is told.",
    supportedInterfaces: [{ url: `${url}/a2a`, protocolBinding: "JSONRPC", tenant: "", protocolVersion: "1.0" }],
    provider: undefined,
    version: "1.0.0",
    capabilities: { streaming: false, pushNotifications: false, extensions: [] },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ["text/plain"],
    defaultOutputModes: ["text/plain"],
    skills: [
      {
        id: "echo",
        name: "echo",
        description: "echoes",
        tags: [],
        examples: [],
        inputModes: [],
        outputModes: [],
        securityRequirements: [],
      },
    ],
    signatures: [],
  };
}

async function bodyOf(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

/** The card (and a page that is not one) on GET, JSON-RPC on POST /a2a, through the SDK's handler. */
function serveA2a(card: AgentCard): Server {
  const transport = new JsonRpcTransportHandler(new DefaultRequestHandler(card, new InMemoryTaskStore(), echo));
  return createServer(async (request: IncomingMessage, response: ServerResponse) => {
    const send = (status: number, body: unknown) => {
      response.writeHead(status, { "content-type": "application/json" });
      response.end(JSON.stringify(body));
    };
    if (request.method === "GET" && request.url === "/.well-known/agent-card.json")
      return send(200, AgentCard.toJSON(card));
    if (request.method === "GET" && request.url === "/not-a-card.json") return send(200, { hello: "world" });
    if (request.method === "POST" && request.url === "/a2a") {
      const context = defaultServerCallContextBuilder({
        extensions: undefined,
        user: new UnauthenticatedUser(),
        headers: request.headers,
        requestedVersion: undefined,
      });
      const answer = await transport.handle(await bodyOf(request), context);
      if (Symbol.asyncIterator in answer) return send(500, { error: "streaming is not served here" });
      return send(200, answer);
    }
    send(404, { error: "not found" });
  });
}

beforeAll(async () => {
  // The runner runs in this process and reads its allowlist from the environment at each card's fetch.
  process.env.CONCLAVE_A2A_ALLOW = "127.0.0.1";
  const port = await freePort();
  baseUrl = `http://127.0.0.1:${port}`;
  server = serveA2a(cardAt(baseUrl));
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  await processes.spawn("a2a", ["worker", "--agents", "./test/fixtures/a2a/agents.ts"]);
  runner = await Runner.start(await nats.connect("runner"));
  client = await connect({ nc: await nats.connect("client") });
});
afterAll(async () => {
  delete process.env.CONCLAVE_A2A_ALLOW;
  await runner?.stop();
  await new Promise((resolve) => server?.close(resolve));
});

/** A workflow: `tester.asker` may delegate to `remote.echo`, the A2A agent whose card is at `card`. */
function recipe(name: string, remote: JsonObject, policy: JsonObject = {}): JsonObject {
  return {
    apiVersion: "coreason.ai/v2",
    kind: "Recipe",
    metadata: { name },
    policy: { max_retries: 0, ...policy },
    definitions: {
      asker: { type: "agent", id: "tester.asker", delegates: ["echo"] },
      echo: { type: "agent", id: "remote.echo", ...remote },
    },
    workflow: { start: "ask", steps: { ask: { type: "agent", agent: "asker" } } },
  };
}

const logOf = (session: string, turnId: number) => turnLog(client, session, turnId);

/** The one-line error a failed run ended with ("" when it did not fail). */
const failureOf = (run: Awaited<ReturnType<ConclaveClient["run"]>>): string =>
  run.status === "completed" && run.outcome.status === "Failed" ? run.outcome.error.message : "";

const delegationsOf = (events: EngineEvent[]) =>
  events.flatMap((event) => (event.kind === "AGENT_DELEGATED" ? [event.payload] : []));

describe("A2A delegation", () => {
  it("a remote agent is a recipe definition: an a2a+https uri or an a2a block; a bad url is a load issue", () => {
    const loaded = loadRecipe(recipe("load", { uri: "a2a+https://agents.example/.well-known/agent-card.json" }));
    expect(loaded.remote_agents).toEqual({
      "remote.echo": { card_url: "https://agents.example/.well-known/agent-card.json" },
    });
    expect(loadRecipe(recipe("load", { a2a: { card_url: "http://127.0.0.1:1/card.json" } })).remote_agents).toEqual({
      "remote.echo": { card_url: "http://127.0.0.1:1/card.json" },
    });
    expect(() => loadRecipe(recipe("load", { a2a: { card_url: "ftp://agents.example/card" } }))).toThrow(
      /definitions\.echo\.a2a\.card_url.*http\(s\)/,
    );
  });

  it("an agent's ctx.delegate asks the remote agent over A2A; its answer is the agent's, and the log shows it", async () => {
    const session = "a2a-delegate";
    const run = await client.run(session, recipe(session, { uri: `a2a+${baseUrl}/.well-known/agent-card.json` }), {
      inputs: { request: "ask remote.echo: hello over A2A" },
    });
    expect(run.status === "completed" && run.outcome).toMatchObject({ status: "Complete" });
    expect(run.status === "completed" && run.output.ask).toEqual({ answer: "echo: hello over A2A" });
    expect(received).toContain("hello over A2A");
    const delegated = delegationsOf(await logOf(session, run.turnId));
    expect(delegated).toEqual([
      expect.objectContaining({
        agent_id: "tester.asker",
        to: "remote.echo",
        depth: 1,
        ok: true,
        output: "echo: hello over A2A",
      }),
    ]);
  });

  it("a pipeline agent delegates to a remote A2A agent its definition names", async () => {
    await processes.spawn("a2a-pipeline", ["worker", "--agents", "./test/fixtures/a2a/pipeline.ts"], {
      CONCLAVE_TEST_A2A_CARD: `${baseUrl}/.well-known/agent-card.json`,
    });
    await processes.spawn("core", ["worker", "--services", "scheduler,council,critics,memory"]);
    const session = "a2a-pipeline";
    const turn = client.submit(session, "hello from the pipeline");
    const { turn_id: turnId } = await turn.ack;
    await turn.result;
    const events = await logOf(session, turnId);
    const answer = events.find(
      (event) => event.kind === "AGENT_COMPLETED" && event.payload.agent_id === "tester.relay_out",
    );
    expect(answer?.kind === "AGENT_COMPLETED" && answer.payload.output).toEqual({
      answer: "echo: hello from the pipeline",
    });
    expect(delegationsOf(events)).toEqual([
      expect.objectContaining({ agent_id: "tester.relay_out", to: "remote.echo", depth: 1, ok: true }),
    ]);
  }, 60_000);

  it("an unreachable card fails the run with one line naming its url, nothing of what answered", async () => {
    const session = "a2a-unreachable";
    const dead = `http://127.0.0.1:${await freePort()}/.well-known/agent-card.json`;
    const run = await client.run(session, recipe(session, { a2a: { card_url: dead } }), {
      inputs: { request: "ask remote.echo: anyone there?" },
    });
    expect(run.status).toBe("completed");
    if (run.status !== "completed") return;
    expect(run.outcome.status).toBe("Failed");
    const message = failureOf(run);
    expect(message).toContain(`A2A agent ${dead}: remote agent unreachable`);
    expect(message).not.toMatch(/ECONNREFUSED|\n/);
    const [refused] = delegationsOf(await logOf(session, run.turnId));
    expect(refused).toMatchObject({ to: "remote.echo", ok: false, error: { code: "agent_failed" } });
  });

  it("a document that is not an agent card, and a task needing input, fail with a clear line", async () => {
    const notCard = await client.run(
      "a2a-not-card",
      recipe("a2a-not-card", { a2a: { card_url: `${baseUrl}/not-a-card.json` } }),
      {
        inputs: { request: "ask remote.echo: hi" },
      },
    );
    expect(failureOf(notCard)).toContain(`A2A agent ${baseUrl}/not-a-card.json: the agent card has no name`);
    const needs = await client.run(
      "a2a-input",
      recipe("a2a-input", { uri: `a2a+${baseUrl}/.well-known/agent-card.json` }),
      { inputs: { request: "ask remote.echo: need input, please" } },
    );
    expect(failureOf(needs)).toMatch(/the task needs more input, which delegation cannot give yet: which city\?/);
  });

  it("the delegation depth guard applies: a remote agent is one level more", async () => {
    const session = "a2a-too-deep";
    const before = received.length;
    const run = await client.run(
      session,
      recipe(session, { uri: `a2a+${baseUrl}/.well-known/agent-card.json` }, { tools: { max_delegation_depth: 0 } }),
      { inputs: { request: "ask remote.echo: too deep" } },
    );
    expect(run.status === "completed" && run.outcome).toMatchObject({
      status: "Failed",
      error: { code: "delegation_depth_exceeded" },
    });
    expect(received.length).toBe(before);
    const [refused] = delegationsOf(await logOf(session, run.turnId));
    expect(refused).toMatchObject({
      to: "remote.echo",
      depth: 1,
      ok: false,
      error: { code: "delegation_depth_exceeded" },
    });
  });

  it("a workflow step whose agent is the remote one asks it directly", async () => {
    const session = "a2a-step";
    const document = recipe(session, { uri: `a2a+${baseUrl}/.well-known/agent-card.json` });
    (document.workflow as JsonObject).steps = { ask: { type: "agent", agent: "echo" } };
    const run = await client.run(session, document, { inputs: { request: "straight to you" } });
    expect(run.status === "completed" && run.outcome).toMatchObject({ status: "Complete" });
    expect(run.status === "completed" && run.output.ask).toBe(`echo: ${received.at(-1)}`);
  });
});
