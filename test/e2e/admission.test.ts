/**
 * Admission control on a real stack: a runner that may run one turn at once
 * and keep three waiting. The council is held at a gate the test opens, so
 * which turns run, wait or are refused is decided by events, not timing.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { builtinAgents } from "../../src/agents/builtins.ts";
import { subjects } from "../../src/bus/subjects.ts";
import { type ConclaveClient, connect, type EngineEvent, type TurnAck } from "../../src/client/index.ts";
import { type CognitionBackend, offlineBackend } from "../../src/cognition/backend.ts";
import { isConclaveError } from "../../src/errors.ts";
import { eventStreamCount } from "../../src/eventlog/eventStreams.ts";
import { Runner } from "../../src/runtime/runner/runner.ts";
import { startWorker } from "../../src/workers/startWorker.ts";
import { CORE_SERVICES, type WorkerHandle } from "../../src/workers/workerOptions.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { waitForEvent } from "../helpers/wait.ts";

const nats = useNatsServer();

/** The council waits here until the test opens it; `reached` resolves at each council call. */
class Gate {
  #open: Promise<void>;
  #release: () => void = () => {};
  #calls = 0;
  #onCall: Array<{ count: number; resolve: () => void }> = [];
  constructor() {
    this.#open = new Promise((resolve) => {
      this.#release = resolve;
    });
  }
  async pass(): Promise<void> {
    this.#calls += 1;
    for (const waiter of this.#onCall.filter((w) => w.count <= this.#calls)) waiter.resolve();
    await this.#open;
  }
  /** How many times the council has been called. */
  get calls(): number {
    return this.#calls;
  }
  /** Resolves once the council has been called `count` times. */
  reached(count: number): Promise<void> {
    if (this.#calls >= count) return Promise.resolve();
    return new Promise((resolve) => this.#onCall.push({ count, resolve }));
  }
  open(): void {
    this.#release();
  }
  close(): void {
    this.#open = new Promise((resolve) => {
      this.#release = resolve;
    });
  }
}

const gate = new Gate();
const gatedBackend: CognitionBackend = {
  ...offlineBackend,
  decide: async (request, signal) => {
    await gate.pass();
    return offlineBackend.decide(request, signal);
  },
};

let runner: Runner;
let worker: WorkerHandle;
let client: ConclaveClient;

beforeAll(async () => {
  worker = await startWorker({
    nc: await nats.connect("worker"),
    agents: builtinAgents("*"),
    services: [...CORE_SERVICES],
    backend: gatedBackend,
  });
  runner = await Runner.start(await nats.connect("runner"), { admission: { maxRunning: 1, maxQueued: 3 } });
  client = await connect({ nc: await nats.connect("client") });
});

afterAll(async () => {
  gate.open();
  await client?.close();
  await runner?.stop();
  await worker?.stop();
});

const queuedEvent = (sessionId: string) => (event: EngineEvent) =>
  event.session_id === sessionId && event.kind === "TURN_QUEUED";

describe("admission control", () => {
  it("queues turns beyond the running limit with their position, refuses one beyond the queue as busy, and runs them all once a place frees", async () => {
    const watcher = await nats.connect("client");
    const first = client.submit("adm-1", "I'm stressed about my deadline");
    expect((await first.ack).admission).toEqual({ state: "running" });
    await gate.reached(1);

    const second = client.submit("adm-2", "I'm stressed about my deadline");
    expect((await second.ack).admission).toEqual({ state: "queued", position: 1 });
    const queued2 = await waitForEvent(
      watcher,
      subjects.sessionLog("adm-2", await eventStreamCount(watcher)),
      queuedEvent("adm-2"),
    );
    expect(queued2.payload).toEqual({ position: 1 });

    const third = client.submit("adm-3", "I'm stressed about my deadline");
    expect((await third.ack).admission).toEqual({ state: "queued", position: 2 });
    const queued3 = await waitForEvent(
      watcher,
      subjects.sessionLog("adm-3", await eventStreamCount(watcher)),
      queuedEvent("adm-3"),
    );
    expect(queued3.payload).toEqual({ position: 2 });
    const fifth = client.submit("adm-5", "I'm stressed about my deadline");
    expect((await fifth.ack).admission).toEqual({ state: "queued", position: 3 });
    await waitForEvent(watcher, subjects.sessionLog("adm-5", await eventStreamCount(watcher)), queuedEvent("adm-5"));

    // The queue is full: refused before anything is stored, with a hint of when to come back.
    const refused = await client.submit("adm-4", "I'm stressed about my deadline").ack.catch((error: unknown) => error);
    expect(isConclaveError(refused, "busy")).toBe(true);
    expect((refused as { retryAfterMs?: number }).retryAfterMs).toBeGreaterThan(0);
    expect(await client.turns("adm-4")).toEqual([]);

    gate.open();
    const results = await Promise.all([first.result, second.result, third.result, fifth.result]);
    for (const result of results) expect(result.response).not.toBe("");
    // Stage deadlines measure work, not the wait: the queued turns were not degraded by it.
    expect(results.map((result) => result.outcome.status)).toEqual(["Complete", "Complete", "Complete", "Complete"]);

    // Tried again after the hint, it is taken (to run at once, or after the last of the others' places frees).
    const retried = client.submit("adm-4", "I'm stressed about my deadline");
    expect((await retried.ack).admission?.state).toMatch(/^(running|queued)$/);
    expect((await retried.result).outcome.status).toBe("Complete");
    await watcher.close();
  });

  it("is fair: a quiet session's turn runs before a chatty session's later turns", async () => {
    // The earlier turns settled (their WAL entries acked): the intake counts only what is not finished.
    await runner.drain();
    gate.close();
    const blocker = client.submit("fair-blocker", "I'm stressed about my deadline");
    await blocker.ack;
    await gate.reached(6); // the five council calls of the first test, then this one
    const watcher = await nats.connect("client");
    const chatty = [client.submit("fair-chatty", "one"), client.submit("fair-chatty", "two")];
    await Promise.all(chatty.map((turn) => turn.ack));
    await waitForEvent(
      watcher,
      subjects.sessionLog("fair-chatty", await eventStreamCount(watcher)),
      queuedEvent("fair-chatty"),
    );
    const quiet = client.submit("fair-quiet", "I'm stressed about my deadline");
    await quiet.ack;
    await waitForEvent(
      watcher,
      subjects.sessionLog("fair-quiet", await eventStreamCount(watcher)),
      queuedEvent("fair-quiet"),
    );
    gate.open();
    await Promise.all([blocker.result, quiet.result, ...chatty.map((turn) => turn.result)]);
    // One turn ran at a time: the order of their starts is the order they were admitted.
    // When each TURN_STARTED was stored: the order turns started in. (Not its position: the sessions' events may
    // be in different streams of the log, whose positions do not compare. One turn runs at a time, so their
    // starts are a whole turn apart.)
    const startedAt = async (sessionId: string, turnId: number) => {
      const [started] = await client.queryEvents(sessionId, { turnId, kinds: ["TURN_STARTED"] });
      if (!started) throw new Error(`no TURN_STARTED for ${sessionId}/${turnId}`);
      return Date.parse(started.time);
    };
    const [chatty1, chatty2, quiet1] = await Promise.all([
      startedAt("fair-chatty", 1),
      startedAt("fair-chatty", 2),
      startedAt("fair-quiet", 1),
    ]);
    expect(chatty1).toBeLessThan(quiet1);
    expect(quiet1).toBeLessThan(chatty2);
    await watcher.close();
  });

  it("ends a cancelled turn at once, while it waits, without waiting for a place", async () => {
    // The earlier turns settled (their WAL entries acked): the intake counts only what is not finished.
    await runner.drain();
    gate.close();
    const blocker = client.submit("cancel-blocker", "I'm stressed about my deadline");
    await blocker.ack;
    await gate.reached(10);
    const waiting = client.submit("cancel-waiting", "I'm stressed about my deadline");
    expect((await waiting.ack).admission?.state).toBe("queued");
    const watcher = await nats.connect("client");
    await waitForEvent(
      watcher,
      subjects.sessionLog("cancel-waiting", await eventStreamCount(watcher)),
      queuedEvent("cancel-waiting"),
    );
    await waiting.cancel("changed my mind");
    const result = await waiting.result;
    expect(result.outcome.status).toBe("Cancelled");
    gate.open();
    await blocker.result;
    await watcher.close();
  });

  it("answers a burst far over its limits with busy before anything is stored, and fails none it accepted", async () => {
    // The earlier turns settled (their WAL entries acked): the intake counts only what is not finished.
    await runner.drain();
    gate.close();
    const calls = gate.calls;
    // Forty submissions at once against one running place and three waiting: before the fix, the intake counted
    // only turns the WAL had delivered, and told every one of them `running`.
    const burst = Array.from({ length: 40 }, (_, i) => ({
      session: `burst-${i}`,
      turn: client.submit(`burst-${i}`, "I'm stressed about my deadline"),
    }));
    const acks = await Promise.all(
      burst.map(({ turn }) =>
        turn.ack.then(
          (ack) => ack,
          (error: unknown) => error,
        ),
      ),
    );
    const refused = acks.filter((ack) => isConclaveError(ack, "busy"));
    const accepted = burst.filter((_, i) => !isConclaveError(acks[i], "busy"));
    const states = acks.filter((ack) => !isConclaveError(ack, "busy")).map((ack) => (ack as TurnAck).admission?.state);
    expect(accepted.length).toBeLessThanOrEqual(4);
    expect(states.filter((state) => state === "running").length).toBeLessThanOrEqual(1);
    expect(refused.length).toBeGreaterThanOrEqual(36);
    for (const error of refused) expect((error as { retryAfterMs?: number }).retryAfterMs).toBeGreaterThan(0);
    await gate.reached(calls + 1);
    gate.open();
    const results = await Promise.all(accepted.map(({ turn }) => turn.result));
    expect(results.map((result) => result.outcome.status)).toEqual(accepted.map(() => "Complete"));
    // A refused submission left nothing behind: no turn of its session exists.
    const refusedSessions = burst.filter((_, i) => isConclaveError(acks[i], "busy")).map(({ session }) => session);
    for (const session of refusedSessions.slice(0, 5)) expect(await client.turns(session)).toEqual([]);
  });
});
