import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { builtinAgents } from "../../src/agents/builtins.ts";
import type { HandlerError } from "../../src/bus/errors.ts";
import { subjects } from "../../src/bus/subjects.ts";
import { type ConclaveClient, connect } from "../../src/client/index.ts";
import type { EngineEvent } from "../../src/contracts/events.ts";
import { Runner } from "../../src/runtime/runner/runner.ts";
import { startWorker } from "../../src/workers/startWorker.ts";
import { CORE_SERVICES, type WorkerHandle } from "../../src/workers/workerOptions.ts";
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
/** The voice's streamed rendering for the turn taken over, every attempt's. */
const isHungVoice = (body: ChatRequestBody) => body.stream === true && JSON.stringify(body).includes("hang the voice");

let model: OpenAIServer;
let worker: WorkerHandle;
/** The runner that takes every turn first; the takeover test stops it and `second` takes over. */
let runner: Runner;
let second: Runner | undefined;
let third: Runner | undefined;
let client: ConclaveClient;
/** The error replies the worker sent, by endpoint: how each abandoned call ended there. */
const workerErrors: { endpoint: string; error: HandlerError }[] = [];

beforeAll(async () => {
  model = await startOpenAIServer((body, index) =>
    isHungCouncil(body) || isHungCritic(body) || isHungVoice(body) ? { hang: true } : cooperative(body, index),
  );
  worker = await startWorker({
    nc: await nats.connect("worker"),
    agents: builtinAgents("emotion.*,inhibition.*"),
    services: [...CORE_SERVICES],
    // Far beyond the test's own timeout: a hung request closes only when the worker aborts it.
    llm: { baseURL: model.url, apiKey: "test", model: "scripted-model", timeoutMs: 600_000, maxRetries: 0 },
    serve: { onError: (endpoint, error) => workerErrors.push({ endpoint, error }) },
  });
  runner = await Runner.start(await nats.connect("runner"), { id: "aborts-first" });
  client = await connect({ nc: await nats.connect("client") });
});
afterAll(async () => {
  await third?.stop();
  await second?.stop();
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

  it("are aborted when the turn is taken over, and the new attempt's calls run", async () => {
    const turn = client.submit("aborts-takeover", "please hang the voice");
    const collected = eventsOf(turn);
    await model.received(isHungVoice);
    second = await Runner.start(await nats.connect("runner"), { id: "aborts-second" });
    // The first runner lets go of its turns unfinished (its voice call still open on the worker): the second takes over.
    await runner.stop(0);
    // The first attempt's voice call stops on the takeover's message; the new attempt renders again.
    await expect(model.closed(isHungVoice)).resolves.toEqual({ aborted: true });
    const voices = () => model.requests.filter(isHungVoice);
    const again = await model.received((body) => isHungVoice(body) && voices().indexOf(body) === 1);
    expect(again).toBeDefined();
    // Cancelled now, or ended meanwhile (its deadline): either way the new attempt's call ran until then.
    await client.cancel("aborts-takeover", 1, "enough");
    await collected;
    await expect(model.closed((body) => body === again)).resolves.toEqual({ aborted: true });
    expect(model.openRequests).toBe(0);
    const voiceErrors = workerErrors.filter(({ endpoint }) => endpoint === "voice").map(({ error }) => error.message);
    // The takeover's message, sent before the new attempt's request, stopped the old call only.
    expect(voiceErrors).toEqual([
      expect.stringMatching(/another runner took it over/),
      expect.stringMatching(/was cancelled: (enough|it ended)/),
    ]);
  });

  it("are spared when they are steps of a turn taken over: the new attempt joins the council's call", async () => {
    const isStepCouncil = (body: ChatRequestBody) => isHungCouncil(body) && JSON.stringify(body).includes("step");
    // Every council request on the bus for the session (a plain subscription: the first attempt's and the new one's).
    let asks = 0;
    let askedAgain = () => {};
    const newAttemptAsked = new Promise<void>((resolve) => {
      askedAgain = resolve;
    });
    const watcher = await nats.connect("worker");
    watcher.subscribe(subjects.councilDecide, {
      callback: (error, msg) => {
        if (error || msg.json<{ session_id: string }>().session_id !== "aborts-step") return;
        asks += 1;
        if (asks === 2) askedAgain();
      },
    });
    await watcher.flush();
    const turn = client.submit("aborts-step", "please hang the council step");
    const collected = eventsOf(turn);
    await model.received(isStepCouncil);
    third = await Runner.start(await nats.connect("runner"), { id: "aborts-third" });
    await second?.stop(0);
    await newAttemptAsked;
    await client.cancel("aborts-step", 1, "enough");
    await collected;
    await expect(model.closed(isStepCouncil)).resolves.toEqual({ aborted: true });
    // One model call for both attempts, stopped by the turn's cancellation or end, never by the takeover.
    expect(model.requests.filter(isStepCouncil)).toHaveLength(1);
    const errors = workerErrors.filter(({ error }) => error.message.includes("aborts-step/1"));
    expect(errors.length).toBeGreaterThan(0);
    for (const { error } of errors) expect(error.message).not.toMatch(/took it over/);
  });
});
