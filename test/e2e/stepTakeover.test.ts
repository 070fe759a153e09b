/**
 * Two workers per step (two agents workers, two core workers: real
 * processes), in LLM mode against the suite's model server:
 * - the runner dies while the council's model calls are under way, and the
 *   runner that takes the turns over asks the council again, on either core
 *   worker: the model sees no call twice (the workers' step answers are in KV
 *   by default, src/bus/sharedSteps.ts, so a re-ask that reaches the other
 *   worker waits for the answer instead of running the model);
 * - the core worker running the council dies with a spare alive: the runner
 *   resends the request, the spare takes the dead worker's claim over, and the
 *   turn ends Complete, with no council fallback (the one repeated call left
 *   is the one lost with its worker).
 */
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/nats-core";
import { beforeAll, describe, expect, it } from "vitest";
import { STEP_REPLY_TTL_MS } from "../../src/bus/sharedSteps.ts";
import { buckets, subjects } from "../../src/bus/subjects.ts";
import type { ConclaveProcess } from "../../src/cli/childProcess.ts";
import { submitTurn } from "../../src/client/turns.ts";
import type { EngineEvent } from "../../src/contracts/events.ts";
import { readEvents } from "../../src/eventlog/reader.ts";
import { conclaveModel } from "../helpers/conclaveModel.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { type ChatRequestBody, type OpenAIServer, startOpenAIServer } from "../helpers/openaiServer.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";
import { settledStatus } from "../helpers/turnStatus.ts";
import { until } from "../helpers/wait.ts";

const nats = useNatsServer();
let model: OpenAIServer;
const processes = useConclaveProcesses(
  () => nats.url,
  // The workers' defaults: step answers shared (CONCLAVE_SHARED_STEPS is not set).
  () => ({ CONCLAVE_LLM_BASE_URL: model.url, CONCLAVE_LLM_MODEL: "scripted-model" }),
);
const cores: ConclaveProcess[] = [];

/** How many council model calls to hold next, and the held ones' releases. */
let holdCouncil = 0;
const held: (() => void)[] = [];
const releaseHeld = () => {
  for (const release of held.splice(0)) release();
};

const isCouncil = (body: ChatRequestBody) => body.response_format?.json_schema?.name === "council_decision";

/** Council requests seen on the bus, by session (a plain subscription: every request, whoever serves it). */
const councilAsks = new Map<string, number>();
let client: NatsConnection;

beforeAll(async () => {
  const answer = conclaveModel();
  model = await startOpenAIServer(async (body, index) => {
    if (isCouncil(body) && holdCouncil > 0) {
      holdCouncil -= 1;
      await new Promise<void>((resolve) => held.push(resolve));
    }
    return answer(body, index);
  });
  const spawned = await Promise.all([
    processes.spawn("agents-1", ["worker", "--agents", "*"]),
    processes.spawn("agents-2", ["worker", "--agents", "*"]),
    processes.spawn("core-1", ["worker", "--services", "scheduler,council,critics,memory"]),
    processes.spawn("core-2", ["worker", "--services", "scheduler,council,critics,memory"]),
  ]);
  cores.push(...spawned.slice(2));
  const watcher = await nats.connect("worker");
  watcher.subscribe(subjects.councilDecide, {
    callback: (error, msg) => {
      if (error) return;
      const { session_id } = msg.json<{ session_id: string }>();
      councilAsks.set(session_id, (councilAsks.get(session_id) ?? 0) + 1);
    },
  });
  client = await nats.connect("client");
  return () => {
    releaseHeld();
    return model.stop();
  };
}, 120_000);

/** Who made a model request, and with what: two requests alike are the same call made twice. */
const callOf = (body: ChatRequestBody): string =>
  JSON.stringify({
    schema: body.response_format?.json_schema?.name ?? null,
    stream: body.stream ?? false,
    messages: body.messages,
  });

async function completedOf(sessionId: string, turnId: number): Promise<EngineEvent> {
  const nc = await nats.connect("observer");
  const events = await readEvents(jetstream(nc), await jetstreamManager(nc), sessionId, turnId);
  const completed = events.at(-1);
  if (completed?.kind !== "TURN_COMPLETED") throw new Error(`turn ${sessionId}/${turnId} did not complete`);
  return completed;
}

describe("a step with two workers", () => {
  it("is not run again when the runner dies mid-call and its turns are taken over", async () => {
    const sessions = ["takeover-a", "takeover-b", "takeover-c"];
    holdCouncil = sessions.length;
    const doomed = await processes.spawn("runner-1", ["runner"]);
    const died = new Promise<void>((resolve) => doomed.child.once("exit", () => resolve()));
    const acks = await Promise.all(
      // Each its own text: the model sees their calls as different calls.
      sessions.map((session) => submitTurn(client, session, { text: `I'm stressed about my deadline (${session})` })),
    );
    await until(() => held.length === sessions.length, { timeoutMs: 60_000, what: "the councils' model calls" });
    doomed.child.kill("SIGKILL");
    await died;
    const askedBefore = new Map(sessions.map((session) => [session, councilAsks.get(session) ?? 0]));

    await processes.spawn("runner-2", ["runner"]);
    // The new runner asks each council again (on either core worker); then the held calls answer.
    await until(() => sessions.every((session) => (councilAsks.get(session) ?? 0) > (askedBefore.get(session) ?? 0)), {
      timeoutMs: 60_000,
      what: "the council asked again by the runner that took the turns over",
    });
    releaseHeld();

    for (const ack of acks) {
      expect((await settledStatus(client, ack.session_id, ack.turn_id, 60_000)).status).toBe("done");
      const completed = await completedOf(ack.session_id, ack.turn_id);
      if (completed.kind !== "TURN_COMPLETED") throw new Error("not completed");
      expect(completed.payload.outcome).toEqual({ status: "Complete" });
    }
    const calls = model.requests.map(callOf);
    expect(calls.filter((call, index) => calls.indexOf(call) !== index)).toEqual([]);
    expect(model.requests.filter(isCouncil)).toHaveLength(sessions.length);
  }, 180_000);

  it("resends the council's request to the spare when its worker dies: the turn is not degraded", async () => {
    const councilsBefore = model.requests.filter(isCouncil).length;
    holdCouncil = 1;
    const ack = await submitTurn(client, "spare-council", { text: "I'm stressed about my deadline tomorrow" });
    await until(() => held.length === 1, { timeoutMs: 60_000, what: "the council's model call" });
    // The core worker holding the council's claim (made once the call has run CLAIM_AFTER_MS) dies mid-call.
    const kv = await new Kvm(await nats.connect("worker")).create(buckets.stepReplies, {
      history: 1,
      ttl: STEP_REPLY_TTL_MS,
    });
    let claim: { worker?: string } = {};
    await until(
      async () => {
        const entry = await kv.get(`${ack.session_id}.council.${ack.turn_id}`);
        if (entry?.operation === "PUT") claim = JSON.parse(new TextDecoder().decode(entry.value)) as typeof claim;
        return claim.worker !== undefined;
      },
      { what: "the council's claim" },
    );
    const holder = cores.find((core) => claim.worker?.endsWith(`:${core.child.pid}`));
    if (!holder) throw new Error(`no core worker holds the council's claim (${JSON.stringify(claim)})`);
    const died = new Promise<void>((resolve) => holder.child.once("exit", () => resolve()));
    holder.child.kill("SIGKILL");
    await died;
    releaseHeld();

    expect((await settledStatus(client, ack.session_id, ack.turn_id, 60_000)).status).toBe("done");
    const completed = await completedOf(ack.session_id, ack.turn_id);
    if (completed.kind !== "TURN_COMPLETED") throw new Error("not completed");
    expect(completed.payload.outcome).toEqual({ status: "Complete" });
    expect(completed.payload.response).not.toBe("");
    // The call lost with its worker, and the spare's: the one repeat a dead worker leaves.
    expect(model.requests.filter(isCouncil).length - councilsBefore).toBe(2);
  }, 120_000);
});
