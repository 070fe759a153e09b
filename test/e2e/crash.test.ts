import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ConclaveProcess } from "../../src/cli/childProcess.ts";
import { submitTurn } from "../../src/client/turns.ts";
import type { EngineEvent } from "../../src/contracts/events.ts";
import type { TurnAck } from "../../src/contracts/turn.ts";
import { readEvents } from "../../src/eventlog/reader.ts";
import { TurnStatusStore } from "../../src/runtime/turnStatusStore.ts";
import { conclaveModel } from "../helpers/conclaveModel.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { type OpenAIServer, startOpenAIServer } from "../helpers/openaiServer.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";

/**
 * Crashes for real: runners and workers killed with SIGKILL mid-turn, and
 * nats-server stopped and restarted mid-conversation. Every submitted turn
 * must complete exactly once, with its event log contiguous and free of
 * duplicates. Turns are made slow enough to be caught mid-flight by a model
 * that takes 150 ms per call.
 */
const nats = useNatsServer();
let model: OpenAIServer;
const processes = useConclaveProcesses(
  () => nats.url,
  () => ({ CONCLAVE_LLM_BASE_URL: model.url, CONCLAVE_LLM_MODEL: "slow-model", CONCLAVE_LLM_MAX_RETRIES: "0" }),
);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const runners: ConclaveProcess[] = [];
let agentWorkers: ConclaveProcess[] = [];

beforeAll(async () => {
  model = await startOpenAIServer(conclaveModel({ latencyMs: 150 }));
  agentWorkers = await Promise.all([
    processes.spawn("agents-1", ["worker", "--agents", "*"]),
    processes.spawn("agents-2", ["worker", "--agents", "*"]),
  ]);
  await processes.spawn("core", ["worker", "--services", "scheduler,council,critics,memory"]);
  runners.push(await processes.spawn("runner-1", ["runner"]), await processes.spawn("runner-2", ["runner"]));
}, 60_000);
afterAll(async () => {
  await model?.stop();
});

/** Waits until every given turn is done (or failed), then returns each turn's stored events. */
async function settle(acks: TurnAck[], timeoutMs = 60_000): Promise<Map<string, EngineEvent[]>> {
  const client = await nats.connect("observer");
  const statuses = await TurnStatusStore.open(client);
  const deadline = Date.now() + timeoutMs;
  for (const ack of acks) {
    for (;;) {
      const status = await statuses.get(ack.session_id, ack.turn_id);
      if (status && (status.status === "done" || status.status === "failed")) {
        expect(status.status, `turn ${ack.session_id}/${ack.turn_id}: ${JSON.stringify(status)}`).toBe("done");
        break;
      }
      if (Date.now() > deadline)
        throw new Error(`turn ${ack.session_id}/${ack.turn_id} still ${status?.status} after ${timeoutMs} ms`);
      await sleep(100);
    }
  }
  const logs = new Map<string, EngineEvent[]>();
  for (const ack of acks) {
    logs.set(
      `${ack.session_id}/${ack.turn_id}`,
      await readEvents(jetstream(client), await jetstreamManager(client), ack.session_id, ack.turn_id),
    );
  }
  return logs;
}

/** Exactly one TURN_COMPLETED, seq 0..n-1 with no gap and no repeat. */
function expectIntact(logs: Map<string, EngineEvent[]>): void {
  for (const [turn, events] of logs) {
    expect(
      events.map((event) => event.seq),
      turn,
    ).toEqual(events.map((_, index) => index));
    expect(
      events.filter((event) => event.kind === "TURN_COMPLETED"),
      turn,
    ).toHaveLength(1);
    expect(events.at(-1)?.kind, turn).toBe("TURN_COMPLETED");
  }
}

describe("a runner killed mid-turn", () => {
  it("has its turns taken over and completed exactly once, again and again", async () => {
    const client = await nats.connect("client");
    const acks: TurnAck[] = [];
    for (const session of ["crash-a", "crash-b", "crash-c"]) {
      for (const text of ["I'm stressed about tomorrow", "can you help me plan?"])
        acks.push(await submitTurn(client, session, { text }));
    }
    for (let round = 0; round < 2; round++) {
      await sleep(400);
      const victim = runners.shift()!;
      victim.child.kill("SIGKILL");
      runners.push(await processes.spawn(`runner-${round + 3}`, ["runner"]));
    }
    const logs = await settle(acks, 90_000);
    expectIntact(logs);
    const resumed = [...logs.values()].flat().filter((event) => event.kind === "TURN_RESUMED");
    expect(resumed.length).toBeGreaterThan(0);
  }, 120_000);
});

describe("an agent worker killed mid-request", () => {
  it("has its requests retried on the other worker, and the turn completes without agent failures", async () => {
    const client = await nats.connect("client");
    const ack = await submitTurn(client, "worker-crash", { text: "I'm stressed about my deadline tomorrow" });
    await sleep(250); // inside the first wave: requests are out to both workers
    agentWorkers[0]!.child.kill("SIGKILL");
    const logs = await settle([ack]);
    expectIntact(logs);
    const events = logs.get("worker-crash/1")!;
    expect(events.filter((event) => event.kind === "AGENT_FAILED")).toEqual([]);
    const survivors = new Set(
      events.flatMap((event) => (event.kind === "AGENT_COMPLETED" ? [event.payload.worker] : [])),
    );
    expect([...survivors].some((worker) => worker.endsWith(`:${agentWorkers[1]!.child.pid}`))).toBe(true);
  }, 60_000);
});

describe("nats-server restarted mid-conversation", () => {
  it("loses no turn: every process reconnects and every submitted turn completes once", async () => {
    const client = await nats.connect("client");
    const before = await submitTurn(client, "restart", { text: "hello before the outage" });
    await sleep(300);
    await nats.restart(1_000);
    // Like any client, retry the submission until the restarted server (and its JetStream) answers.
    let after: TurnAck | null = null;
    for (let tries = 0; !after && tries < 40; tries++) {
      after = await submitTurn(client, "restart", { text: "hello after the outage" }, 2_000).catch(async () => {
        await sleep(250);
        return null;
      });
    }
    if (!after) throw new Error("the runner never accepted a turn after the restart");
    const logs = await settle([before, after!], 90_000);
    expectIntact(logs);
    for (const runner of runners) expect(runner.child.exitCode).toBeNull();
  }, 120_000);
});
