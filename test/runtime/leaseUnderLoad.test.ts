/**
 * A runner whose event loop is blocked for longer than its liveness lease (a burst of turns does this)
 * keeps its turns: with its heartbeat on a thread of its own the lease does not lapse at all, and with
 * heartbeats on the event loop (a runner given no connection settings) the lease lapses, but taking its
 * own turns back is no new attempt: none is poisoned, none fails, each completes once.
 */
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { builtinAgents } from "../../src/agents/builtins.ts";
import { busOptions } from "../../src/bus/connection.ts";
import { type ConclaveClient, connect } from "../../src/client/index.ts";
import { type CognitionBackend, offlineBackend } from "../../src/cognition/backend.ts";
import { readEvents } from "../../src/eventlog/reader.ts";
import { MAX_TURN_ATTEMPTS } from "../../src/eventlog/streams.ts";
import { TurnStatusStore } from "../../src/eventlog/turnStatusStore.ts";
import { LIVENESS_TTL_MS } from "../../src/runtime/runner/liveness.ts";
import { Runner } from "../../src/runtime/runner/runner.ts";
import type { Logger } from "../../src/telemetry/log.ts";
import { startWorker } from "../../src/workers/startWorker.ts";
import { CORE_SERVICES, type WorkerHandle } from "../../src/workers/workerOptions.ts";
import { useNatsServer } from "../helpers/nats.ts";

const nats = useNatsServer();

/** The council waits here while the test holds it, so turns are in flight when the loop is blocked. */
let held: Promise<void> = Promise.resolve();
let release: () => void = () => {};
let councilCalls = 0;
const councilReached: Array<{ count: number; resolve: () => void }> = [];
const hold = () => {
  held = new Promise((resolve) => {
    release = resolve;
  });
};
const reached = (count: number) =>
  councilCalls >= count ? Promise.resolve() : new Promise<void>((resolve) => councilReached.push({ count, resolve }));
const gatedBackend: CognitionBackend = {
  ...offlineBackend,
  decide: async (request, signal) => {
    councilCalls += 1;
    for (const waiter of councilReached.filter((w) => w.count <= councilCalls)) waiter.resolve();
    await held;
    return offlineBackend.decide(request, signal);
  },
};

/** Blocks this process's event loop (runner, worker and all) for `ms`, as a burst's backlog does. */
function blockEventLoop(ms: number): void {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    // busy: no timer, no socket read, no heartbeat on this loop
  }
}

/** A logger that keeps the runner's warnings. */
function warningsLog(): { log: Logger; warnings: string[] } {
  const warnings: string[] = [];
  const log: Logger = {
    debug: () => {},
    info: () => {},
    warn: (message) => warnings.push(message),
    error: (message) => warnings.push(message),
    child: () => log,
  };
  return { log, warnings };
}

let worker: WorkerHandle;
let client: ConclaveClient;
let statuses: TurnStatusStore;

beforeAll(async () => {
  worker = await startWorker({
    nc: await nats.connect("worker"),
    agents: builtinAgents("*"),
    services: [...CORE_SERVICES],
    backend: gatedBackend,
  });
  client = await connect({ nc: await nats.connect("client") });
  statuses = await TurnStatusStore.open(await nats.connect("runner"));
});

afterAll(async () => {
  release();
  await client?.close();
  await worker?.stop();
});

/** Submits one turn to each of `sessions`, blocks the loop `blocks` times while they are held, then lets them run. */
async function turnsThroughStalls(runner: Runner, prefix: string, blocks: number) {
  hold();
  const sessions = Array.from({ length: 4 }, (_, i) => `${prefix}-${i}`);
  const before = councilCalls;
  const turns = sessions.map((session) => client.submit(session, "I'm stressed about my deadline"));
  await Promise.all(turns.map((turn) => turn.ack));
  await reached(before + sessions.length); // every turn is in flight, at its council call
  for (let i = 0; i < blocks; i++) {
    blockEventLoop(2 * LIVENESS_TTL_MS);
    // Let the loop turn (heartbeats, redeliveries) before the next stall.
    await new Promise((resolve) => setTimeout(resolve, LIVENESS_TTL_MS));
  }
  release();
  const results = await Promise.all(turns.map((turn) => turn.result));
  await runner.drain(); // each turn's end settled: its status written
  const records = await Promise.all(sessions.map((session) => statuses.get(session, 1)));
  await runner.stop();
  return { results, records };
}

describe("a runner whose event loop is blocked past its lease", () => {
  it("with its heartbeat on its own thread: the lease never lapses, every turn completes at its first attempt", async () => {
    const { log, warnings } = warningsLog();
    const runner = await Runner.start(await nats.connect("runner"), {
      log,
      heartbeat: busOptions("runner", { servers: nats.url }),
    });
    const { results, records } = await turnsThroughStalls(runner, "thread", 2);
    // The stalls outlast the council's stage deadline, so a turn may end degraded: it still ends, once, here.
    for (const result of results) expect(["Complete", "PartialSuccess"]).toContain(result.outcome.status);
    expect(records.map((record) => [record?.status, record?.attempts])).toEqual(
      Array.from({ length: 4 }, () => ["done", 1]),
    );
    expect(warnings.filter((line) => /lapsed|poison|taken over/.test(line))).toEqual([]);
  });

  it("with heartbeats on its event loop: the lease lapses, yet taking its own turns back poisons none of them", async () => {
    const { log, warnings } = warningsLog();
    const runner = await Runner.start(await nats.connect("runner"), { log });
    // More stalls than a turn has attempts: counted as attempts, they would make every turn poison.
    const { results, records } = await turnsThroughStalls(runner, "loop", MAX_TURN_ATTEMPTS + 1);
    expect(warnings.some((line) => /liveness lease lapsed/.test(line))).toBe(true);
    expect(warnings.filter((line) => /poison/.test(line))).toEqual([]);
    for (const result of results) expect(["Complete", "PartialSuccess"]).toContain(result.outcome.status);
    for (const record of records) {
      expect(record?.status).toBe("done");
      expect(record?.attempts).toBeLessThan(MAX_TURN_ATTEMPTS);
    }
    // Taking its own attempt back marks a resumption once: never a TURN_RESUMED right after its own.
    for (const result of results) {
      const kinds = (
        await readEvents(jetstream(client.nc), await jetstreamManager(client.nc), result.sessionId, result.turnId)
      ).map((event) => event.kind);
      const doubled = kinds.filter((kind, i) => kind === "TURN_RESUMED" && kinds[i - 1] === "TURN_RESUMED");
      expect(doubled, kinds.join(" ")).toEqual([]);
    }
  }, 90_000); // six stalls of 2 leases each, then the turns: longer than the default 30 s on a loaded machine
});
