import { once } from "node:events";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { subjects } from "../../src/bus/subjects.ts";
import type { ConclaveProcess } from "../../src/cli/childProcess.ts";
import { submitTurn } from "../../src/client/turns.ts";
import type { EngineEvent } from "../../src/contracts/events.ts";
import type { TurnAck } from "../../src/contracts/turn.ts";
import { eventStreamCount } from "../../src/eventlog/eventStreams.ts";
import { readEvents } from "../../src/eventlog/reader.ts";
import { TurnStatusStore } from "../../src/eventlog/turnStatusStore.ts";
import { conclaveModel } from "../helpers/conclaveModel.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { type OpenAIServer, startOpenAIServer } from "../helpers/openaiServer.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";
import { settledStatus } from "../helpers/turnStatus.ts";
import { eventually, waitForEvent } from "../helpers/wait.ts";

/**
 * Crashes for real: runners and workers killed with SIGKILL mid-turn, and
 * nats-server stopped and restarted mid-conversation. Every submitted turn
 * must complete exactly once, with its event log contiguous and free of
 * duplicates. Each kill waits for proof that a turn is under way there (a
 * stored WAVE_STARTED, a model request in flight), never for a guessed delay;
 * a model that takes 150 ms per call keeps turns under way long enough.
 */
const nats = useNatsServer();
let model: OpenAIServer;
/** The model of agent worker 1 only: a request reaching it proves that worker holds an agent request. */
let workerOneModel: OpenAIServer;
let onWorkerOneAgentRequest: ((agentId: string) => void) | null = null;
const processes = useConclaveProcesses(
  () => nats.url,
  () => ({ CONCLAVE_LLM_BASE_URL: model.url, CONCLAVE_LLM_MODEL: "slow-model", CONCLAVE_LLM_MAX_RETRIES: "0" }),
);
const runners: ConclaveProcess[] = [];
let agentWorkers: ConclaveProcess[] = [];

beforeAll(async () => {
  model = await startOpenAIServer(conclaveModel({ latencyMs: 150 }));
  const slow = conclaveModel({ latencyMs: 150 });
  workerOneModel = await startOpenAIServer((body, index) => {
    if (body.response_format?.json_schema?.name === "agent_output") {
      const system = body.messages.find((message) => message.role === "system")?.content ?? "";
      onWorkerOneAgentRequest?.(/You are ([a-z_]+\.[a-z_]+)/.exec(system)?.[1] ?? "unknown");
    }
    return slow(body, index);
  });
  agentWorkers = await Promise.all([
    processes.spawn("agents-1", ["worker", "--agents", "*"], { CONCLAVE_LLM_BASE_URL: workerOneModel.url }),
    processes.spawn("agents-2", ["worker", "--agents", "*"]),
  ]);
  await processes.spawn("core", ["worker", "--services", "scheduler,council,critics,memory"]);
  runners.push(await processes.spawn("runner-1", ["runner"]), await processes.spawn("runner-2", ["runner"]));
}, 60_000);
afterAll(async () => {
  await Promise.all([model?.stop(), workerOneModel?.stop()]);
});

/** SIGKILL, resolved once the process is gone. */
async function kill(victim: ConclaveProcess): Promise<void> {
  const exited = once(victim.child, "exit");
  victim.child.kill("SIGKILL");
  await exited;
}

/** Waits until every given turn is settled, expects each done, then returns each turn's stored events. */
async function settle(acks: TurnAck[], timeoutMs = 60_000): Promise<Map<string, EngineEvent[]>> {
  const client = await nats.connect("observer");
  const statuses = await Promise.all(acks.map((ack) => settledStatus(client, ack.session_id, ack.turn_id, timeoutMs)));
  for (const status of statuses)
    expect(status.status, `turn ${status.session_id}/${status.turn_id}: ${JSON.stringify(status)}`).toBe("done");
  const logs = new Map<string, EngineEvent[]>();
  for (const ack of acks) {
    logs.set(
      `${ack.session_id}/${ack.turn_id}`,
      await readEvents(jetstream(client), await jetstreamManager(client), ack.session_id, ack.turn_id),
    );
  }
  return logs;
}

/**
 * Turns of one session ran one at a time, in turn order: in the session's log (stream order), each
 * turn's last attempt starts after the previous turn's TURN_COMPLETED.
 */
async function expectInTurnOrder(sessions: Iterable<string>): Promise<void> {
  const observer = await nats.connect("observer");
  for (const session of sessions) {
    const events = await readEvents(jetstream(observer), await jetstreamManager(observer), session);
    const turnIds = [...new Set(events.map((event) => event.turn_id))].sort((a, b) => a - b);
    for (const [earlier, later] of turnIds.slice(1).map((id, index) => [turnIds[index]!, id] as const)) {
      const completed = events.findIndex((event) => event.turn_id === earlier && event.kind === "TURN_COMPLETED");
      const started = events.findLastIndex((event) => event.turn_id === later && event.kind === "TURN_STARTED");
      expect(started, `${session}: turn ${later} started before turn ${earlier} completed`).toBeGreaterThan(completed);
    }
  }
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
    const observer = await nats.connect("observer");
    const statuses = await TurnStatusStore.open(observer);
    const sessions = new Set(["crash-a", "crash-b", "crash-c"]);
    const acks: TurnAck[] = [];
    for (const session of sessions) {
      for (const text of ["I'm stressed about tomorrow", "can you help me plan?"])
        acks.push(await submitTurn(client, session, { text }));
    }
    /** Each kill: the turn whose wave had just started, and the runner (id `host:pid`) that was running it. */
    const caught: { turn: string; runner: string }[] = [];
    /** The dead runners' replacements, started while the turns go on: a start-up may outlast them. */
    const replacements: Promise<void>[] = [];
    // The sessions' events, in whichever streams of the log they are.
    const count = await eventStreamCount(observer);
    const sessionLogs = [...sessions].map((session) => subjects.sessionEvents(session, count));
    for (let round = 0; round < 2; round++) {
      let resumed: Promise<EngineEvent> | undefined;
      for (;;) {
        // A wave stored from now on belongs to a turn under way: its runner dies in the middle of that turn.
        const wave = await waitForEvent(
          observer,
          sessionLogs,
          (event) => event.kind === "WAVE_STARTED" && sessions.has(event.session_id),
          { from: "now" },
        );
        const turn = `${wave.session_id}/${wave.turn_id}`;
        // Each kill catches another turn: one killed again before it records a step is resumed anew.
        if (caught.some((earlier) => earlier.turn === turn)) continue;
        const owner = (await statuses.get(wave.session_id, wave.turn_id))?.runner;
        const victim = runners.find((runner) => owner?.endsWith(`:${runner.child.pid}`));
        if (!owner || !victim) continue;
        runners.splice(runners.indexOf(victim), 1);
        // The caught turn taken over (its TURN_RESUMED stored) before the next kill.
        resumed = waitForEvent(
          observer,
          subjects.sessionEvents(wave.session_id, count),
          (event) =>
            event.kind === "TURN_RESUMED" &&
            `${event.session_id}/${event.turn_id}` === turn &&
            event.payload.previous_runner === owner,
          { from: "now" },
        );
        await kill(victim);
        caught.push({ turn, runner: owner });
        break;
      }
      replacements.push(
        processes.spawn(`runner-${round + 3}`, ["runner"]).then((runner) => {
          runners.push(runner);
        }),
      );
      await resumed;
    }
    await Promise.all(replacements);
    const logs = await settle(acks, 90_000);
    expectIntact(logs);
    await expectInTurnOrder(sessions);
    // The turns caught mid-wave were resumed by another runner, from the dead one.
    for (const { turn, runner } of caught) {
      const resumed = logs.get(turn)?.filter((event) => event.kind === "TURN_RESUMED") ?? [];
      expect(
        resumed.map((event) => event.payload.previous_runner),
        turn,
      ).toContain(runner);
    }
  }, 120_000);
});

describe("an agent worker killed mid-request", () => {
  it("has its requests retried on the other worker, and the turn completes without agent failures", async () => {
    const client = await nats.connect("client");
    const [victim, survivor] = [agentWorkers[0]!, agentWorkers[1]!];
    const held = new Promise<string>((resolve) => {
      onWorkerOneAgentRequest = resolve;
    });
    const ack = await submitTurn(client, "worker-crash", { text: "I'm stressed about my deadline tomorrow" });
    // Worker 1 is waiting on the model for this agent: the request dies with it.
    const heldAgent = await held;
    onWorkerOneAgentRequest = null;
    await kill(victim);
    const logs = await settle([ack]);
    expectIntact(logs);
    const events = logs.get("worker-crash/1")!;
    expect(events.filter((event) => event.kind === "AGENT_FAILED")).toEqual([]);
    const completed = events.flatMap((event) => (event.kind === "AGENT_COMPLETED" ? [event.payload] : []));
    const retried = completed.filter((output) => output.agent_id === heldAgent);
    expect(retried.length, `${heldAgent} completed`).toBeGreaterThan(0);
    for (const output of retried) expect(output.worker).toMatch(new RegExp(`:${survivor.child.pid}$`));
  }, 60_000);
});

describe("nats-server restarted mid-conversation", () => {
  it("loses no turn: every process reconnects and every submitted turn completes once", async () => {
    const client = await nats.connect("client");
    const observer = await nats.connect("observer");
    const before = await submitTurn(client, "restart", { text: "hello before the outage" });
    // The outage begins while the first turn is under way.
    await waitForEvent(
      observer,
      subjects.turnEvents(before.session_id, before.turn_id, await eventStreamCount(observer)),
      (event) => event.kind === "WAVE_STARTED",
    );
    await nats.restart(1_000);
    // Like any client, retry the submission until the restarted server (and its JetStream) answers.
    const after = await eventually(
      () => submitTurn(client, "restart", { text: "hello after the outage" }, 2_000).catch(() => null),
      (ack) => ack !== null,
      { timeoutMs: 60_000, everyMs: 250 },
    );
    if (!after) throw new Error("the runner never accepted a turn after the restart");
    const logs = await settle([before, after], 90_000);
    expectIntact(logs);
    for (const runner of runners) expect(runner.child.exitCode).toBeNull();
  }, 120_000);
});
