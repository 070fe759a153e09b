/**
 * A runner hosting the scheduler, council, voice and critics itself
 * (`hostCognition`): no worker serves them, the turns complete as the same
 * pipeline computes them in-process, the session's cooldowns still reach KV,
 * and the setting is read from CONCLAVE_RUNNER_COGNITION with a clear error.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { builtinAgents } from "../../src/agents/builtins.ts";
import { type ConclaveClient, connect } from "../../src/client/index.ts";
import { CooldownStore } from "../../src/runtime/cooldownStore.ts";
import { hostsCognition } from "../../src/runtime/runner/parts.ts";
import { Runner } from "../../src/runtime/runner/runner.ts";
import { startWorker } from "../../src/workers/startWorker.ts";
import type { WorkerHandle } from "../../src/workers/workerOptions.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { runLocalTurn } from "../helpers/turns.ts";
import { until } from "../helpers/wait.ts";

const nats = useNatsServer();
let runner: Runner;
let worker: WorkerHandle;
let client: ConclaveClient;

beforeAll(async () => {
  // Agents and memory only: nothing answers on conclave.scheduler.*, conclave.council.* or conclave.critic.*.
  worker = await startWorker({ nc: await nats.connect("worker"), agents: builtinAgents("*"), services: ["memory"] });
  runner = await Runner.start(await nats.connect("runner"), { hostCognition: true });
  client = await connect({ nc: await nats.connect("client") });
});

afterAll(async () => {
  await client?.close();
  await runner?.stop();
  await worker?.stop();
});

describe("a runner hosting the cognition actors", () => {
  it("runs whole turns without a scheduler, council or critic worker, with the in-process pipeline's reply", async () => {
    const text = "I'm stressed about my deadline and my manager keeps adding work";
    const turn = client.submit("hosted-1", text);
    const events = [];
    for await (const event of turn) events.push(event);
    const result = await turn.result;
    const reference = await runLocalTurn(text);

    // Complete: no fallback stood in for a council or voice that did not answer (that would be PartialSuccess).
    expect(result.outcome.status).toBe("Complete");
    expect(result.response).toBe(reference.output.response);
    const kinds = new Set(events.map((event) => event.kind));
    for (const kind of ["SCHEDULE_PLANNED", "COUNCIL_DECISION_MADE", "CRITICS_UPDATED", "MEMORY_COMMITTED"])
      expect(kinds, kind).toContain(kind);
    expect(events.at(-1)?.kind).toBe("TURN_COMPLETED");
  });

  it("keeps the scheduler's cooldowns in KV for the next runner, written behind the plan", async () => {
    await client.submit("hosted-2", "I feel overwhelmed and anxious, everything is too much. Can you help me?").result;
    // A fresh store (what another runner or a worker's scheduler opens) reads them from KV.
    const store = await CooldownStore.open(await nats.connect("worker"));
    await until(async () => Object.keys(await store.load("hosted-2")).length > 0, {
      what: "cooldowns of hosted-2 stored",
    });
  });
});

describe("CONCLAVE_RUNNER_COGNITION", () => {
  it("is 'runner' or 'workers' (the default); the option wins over it", () => {
    expect(hostsCognition(undefined, {})).toBe(false);
    expect(hostsCognition(undefined, { CONCLAVE_RUNNER_COGNITION: "workers" })).toBe(false);
    expect(hostsCognition(undefined, { CONCLAVE_RUNNER_COGNITION: "runner" })).toBe(true);
    expect(hostsCognition(false, { CONCLAVE_RUNNER_COGNITION: "runner" })).toBe(false);
    expect(() => hostsCognition(undefined, { CONCLAVE_RUNNER_COGNITION: "both" })).toThrow(
      'CONCLAVE_RUNNER_COGNITION="both" is invalid: must be one of workers, runner',
    );
  });
});
