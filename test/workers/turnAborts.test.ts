import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { builtinAgents } from "../../src/agents/builtins.ts";
import type { HandlerError } from "../../src/bus/errors.ts";
import { type ConclaveClient, connect } from "../../src/client/index.ts";
import type { EngineEvent } from "../../src/contracts/events.ts";
import { Runner } from "../../src/runtime/runner/runner.ts";
import { CORE_SERVICES, startWorker, type WorkerHandle } from "../../src/workers/startWorker.ts";
import { conclaveModel } from "../helpers/conclaveModel.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { type ChatRequestBody, type OpenAIServer, startOpenAIServer } from "../helpers/openaiServer.ts";

const nats = useNatsServer();
const cooperative = conclaveModel();
const schemaOf = (body: ChatRequestBody) => body.response_format?.json_schema?.name;
const systemOf = (body: ChatRequestBody) => body.messages.find((message) => message.role === "system")?.content ?? "";
/** The session whose council call hangs, and the one whose coherence critic's call hangs. */
const isHungCouncil = (body: ChatRequestBody) =>
  schemaOf(body) === "council_decision" && JSON.stringify(body).includes("hang the council");
const isHungCritic = (body: ChatRequestBody) =>
  schemaOf(body) === "critic_verdict" &&
  systemOf(body).includes("You are the coherence critic") &&
  JSON.stringify(body).includes("hang a critic");

let model: OpenAIServer;
let worker: WorkerHandle;
let runner: Runner;
let client: ConclaveClient;
/** The error replies the worker sent, by endpoint: how each abandoned call ended there. */
const workerErrors: { endpoint: string; error: HandlerError }[] = [];

beforeAll(async () => {
  model = await startOpenAIServer((body, index) =>
    isHungCouncil(body) || isHungCritic(body) ? { hang: true } : cooperative(body, index),
  );
  worker = await startWorker({
    nc: await nats.connect("worker"),
    agents: builtinAgents("emotion.*,inhibition.*"),
    services: [...CORE_SERVICES],
    // Far beyond the test's own timeout: a hung request closes only when the worker aborts it.
    llm: { baseURL: model.url, apiKey: "test", model: "scripted-model", timeoutMs: 600_000, maxRetries: 0 },
    serve: { onError: (endpoint, error) => workerErrors.push({ endpoint, error }) },
  });
  runner = await Runner.start(await nats.connect("runner"));
  client = await connect({ nc: await nats.connect("client") });
});
afterAll(async () => {
  await runner?.stop();
  await worker?.stop();
  await model?.stop();
});

async function eventsOf(turn: AsyncIterable<EngineEvent>): Promise<EngineEvent[]> {
  const events: EngineEvent[] = [];
  for await (const event of turn) events.push(event);
  return events;
}

describe("a worker's calls for a turn that is over", () => {
  it("are aborted when the turn is cancelled during a hung model call: none stays open at the model", async () => {
    const turn = client.submit("aborts-cancel", "please hang the council");
    const collected = eventsOf(turn);
    await model.received(isHungCouncil);
    await expect(client.cancel("aborts-cancel", 1)).resolves.toMatchObject({ status: "cancelling" });
    expect((await turn.result).outcome).toMatchObject({ status: "Cancelled" });
    await collected;
    // The hung request closes because the worker's client gave up on it (the server never answers it).
    await expect(model.closed(isHungCouncil)).resolves.toEqual({ aborted: true });
    expect(model.openRequests).toBe(0);
    expect(workerErrors.find(({ endpoint }) => endpoint === "decide")?.error.code).toBe("cancelled");
  });

  it("are aborted when the turn ends while a critic's model call still hangs", async () => {
    const turn = client.submit("aborts-ended", "please hang a critic");
    const events = await eventsOf(turn);
    expect(events.at(-1)?.kind).toBe("TURN_COMPLETED");
    // The runner gave up on the critic and ended the turn; the worker's call was still open then.
    await expect(model.closed(isHungCritic)).resolves.toEqual({ aborted: true });
    expect(model.openRequests).toBe(0);
    // Stopped by the turn's end, not by the call's own deadline.
    const critic = workerErrors.find(({ endpoint }) => endpoint === "coherence");
    expect(critic?.error.code).toBe("cancelled");
    expect(critic?.error.message).toMatch(/ended \(done\)/);
  });
});
