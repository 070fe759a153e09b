/**
 * Runners joining and leaving under load (issue 36): real `conclave runner` and `conclave worker`
 * processes on one nats-server, several sessions conversing turn after turn through the client
 * (test/helpers/turnLoad.ts), and a change of membership once some turns have finished: a runner
 * joins (then another), a runner is stopped with SIGTERM, a runner is killed with SIGKILL. Every
 * acked turn is read back from the event log afterwards; each test prints its counts and holds
 * them to zero lost, zero run twice (two TURN_COMPLETED, or an agent answer, model step or tool
 * call recorded twice), zero turn-order violations (a session's turn started before its previous
 * turn completed), every turn completed.
 */
import { once } from "node:events";
import { hostname } from "node:os";
import type { NatsConnection } from "@nats-io/nats-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { ConclaveProcess } from "../../src/cli/childProcess.ts";
import { type ConclaveClient, connect } from "../../src/client/index.ts";
import { TurnStatusStore } from "../../src/eventlog/turnStatusStore.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";
import { accountTurns, countsLine, startTurnLoad, type TurnAccount, type TurnLoad } from "../helpers/turnLoad.ts";

const nats = useNatsServer();
const processes = useConclaveProcesses(() => nats.url);
/** Sessions conversing at once. */
const SESSIONS = 8;
/** Turns finished between two steps of a run. */
const STEP_TURNS = 12;
/** Each test's bound: runners starting, the load, the fault, then every turn read back. */
const RUN_TEST_MS = 60_000;

let clients: ConclaveClient[] = [];
let observer: NatsConnection;
/** Opened once a runner has made the bucket (an observer may not). */
let statuses: TurnStatusStore | undefined;

/** A runner process and its name in leases and turn statuses (`<host>:<pid>`, the runner's default). */
interface RunnerProcess {
  process: ConclaveProcess;
  id: string;
}
/** The runners of the current test, stopped after it. */
let runners: RunnerProcess[] = [];

async function startRunner(name: string): Promise<RunnerProcess> {
  const spawned = await processes.spawn(name, ["runner"]);
  const runner = { process: spawned, id: `${hostname()}:${spawned.child.pid}` };
  runners.push(runner);
  return runner;
}

beforeAll(async () => {
  await Promise.all([
    processes.spawn("worker-1", ["worker", "--agents", "*", "--services", "scheduler,council,critics,memory"]),
    processes.spawn("worker-2", ["worker", "--agents", "*", "--services", "scheduler,council,critics,memory"]),
  ]);
  for (let i = 0; i < 2; i++) clients.push(await connect({ nc: await nats.connect("client") }));
  observer = await nats.connect("observer");
});
afterEach(async () => {
  await Promise.allSettled(runners.map((runner) => runner.process.stop(5_000)));
  runners = [];
});
afterAll(async () => {
  await Promise.allSettled(clients.map((client) => client.close()));
  clients = [];
});

function load(label: string, turnsPerSession?: number): TurnLoad {
  return startTurnLoad({
    clients,
    sessions: SESSIONS,
    label,
    thinkMs: 0,
    followTimeoutMs: 30_000,
    runBoundMs: RUN_TEST_MS,
    ...(turnsPerSession ? { turnsPerSession } : {}),
  });
}

/**
 * The runner of `runners` running the most of the turns in flight (each turn's status names its runner), once
 * one runs two (or, asked often enough, one): asked again as turns finish, up to `STEP_TURNS` times.
 */
async function busiest(turns: TurnLoad): Promise<{ runner: RunnerProcess; inFlight: string[] }> {
  statuses ??= await TurnStatusStore.open(observer);
  for (let asked = 0; ; asked++) {
    const running = new Map<string, string[]>();
    for (const key of [...turns.inFlight]) {
      const [session, turn] = key.split("/");
      const status = await statuses.get(session!, Number(turn));
      if (status?.status !== "inflight" || !status.runner) continue;
      running.set(status.runner, [...(running.get(status.runner) ?? []), key]);
    }
    const ranked = runners
      .map((runner) => ({ runner, inFlight: running.get(runner.id) ?? [] }))
      .sort((a, b) => b.inFlight.length - a.inFlight.length);
    // Two turns in flight, or one once asked enough: the fault must catch some turn under way.
    if (ranked[0]!.inFlight.length > (asked < STEP_TURNS / 2 ? 1 : 0) || asked === STEP_TURNS) return ranked[0]!;
    await turns.progress(1);
  }
}

/** Turns acked from the `from`th ack on that `runner` ran (their status names it), once the load has them settled. */
async function ranBy(turns: TurnLoad, runner: RunnerProcess, from: number): Promise<number> {
  statuses ??= await TurnStatusStore.open(observer);
  let count = 0;
  for (const ack of turns.acks.slice(from)) {
    const status = await statuses.get(ack.session_id, ack.turn_id);
    if (status?.status === "done" && status.runner === runner.id) count += 1;
  }
  return count;
}

/** Goes on with the load until `runner` has run some of the turns acked since it joined (at most `rounds` steps). */
async function untilTakesPart(turns: TurnLoad, runner: RunnerProcess, from: number, rounds = 5): Promise<number> {
  for (let round = 1; ; round++) {
    await turns.progress(STEP_TURNS);
    const count = await ranBy(turns, runner, from);
    if (count > 0 || round === rounds) return count;
  }
}

/** Stops the load, reads every acked turn back, prints the counts with `detail`, and holds them. */
async function account(label: string, turns: TurnLoad, detail: string): Promise<TurnAccount> {
  await turns.stop();
  const result = await accountTurns(observer, turns);
  const seconds = ((Date.now() - turns.started) / 1_000).toFixed(1);
  console.log(
    `membership ${label} (${detail}) in ${seconds} s: ${countsLine(result.counts)}; slowest turn ${Math.round(result.slowest)} ms; follows timed out ${turns.stalled.size}`,
  );
  expect(turns.failures).toEqual([]);
  expect(result.outOfOrder).toEqual([]);
  expect(result.broken).toEqual([]);
  expect(result.increasing).toEqual([]);
  expect(result.stalledDetail).toEqual([]);
  expect(result.counts).toMatchObject({
    completed: result.counts.submitted,
    lost: 0,
    twice: 0,
    violations: 0,
    callsRepeated: 0,
  });
  expect(result.counts.submitted).toBeGreaterThanOrEqual(3 * STEP_TURNS);
  return result;
}

describe("runners joining and leaving under load", () => {
  it(
    "a runner joins, then another: they take turns, and every turn completes once, in order",
    async () => {
      await startRunner("join-1");
      // The same sessions throughout: a runner that joins takes its share of them as they go on (their
      // partitions move to it, each session once its turn on the old runner has ended).
      const turns = load("join");
      await turns.progress(STEP_TURNS);
      const second = await startRunner("join-2");
      const bySecond = await untilTakesPart(turns, second, turns.acks.length);
      const third = await startRunner("join-3");
      const byThird = await untilTakesPart(turns, third, turns.acks.length);
      await account("join", turns, "1 runner, a 2nd, then a 3rd joining");
      console.log(`membership join: turns run by the 2nd runner since it joined ${bySecond}, by the 3rd ${byThird}`);
      expect(bySecond).toBeGreaterThan(0);
      expect(byThird).toBeGreaterThan(0);
    },
    RUN_TEST_MS,
  );

  it(
    "a runner stopped with SIGTERM exits 0, and none of its turns is lost",
    async () => {
      await Promise.all([1, 2, 3].map((i) => startRunner(`term-${i}`)));
      const turns = load("term");
      await turns.progress(STEP_TURNS);
      const { runner: victim, inFlight } = await busiest(turns);
      const exited = once(victim.process.child, "exit") as Promise<[number | null, NodeJS.Signals | null]>;
      victim.process.child.kill("SIGTERM");
      const [code, signal] = await exited;
      await turns.progress(2 * STEP_TURNS);
      await account("sigterm", turns, `3 runners, one stopped with ${inFlight.length} of its turns in flight`);
      expect({ code, signal }).toEqual({ code: 0, signal: null });
    },
    RUN_TEST_MS,
  );

  it(
    "a runner killed with SIGKILL has its turns taken over, none lost or run twice",
    async () => {
      await Promise.all([1, 2, 3].map((i) => startRunner(`kill-${i}`)));
      const turns = load("kill");
      await turns.progress(STEP_TURNS);
      const { runner: victim, inFlight } = await busiest(turns);
      const exited = once(victim.process.child, "exit");
      victim.process.child.kill("SIGKILL");
      await exited;
      await turns.progress(2 * STEP_TURNS);
      const result = await account(
        "sigkill",
        turns,
        `3 runners, one killed with ${inFlight.length} of its turns in flight`,
      );
      expect(inFlight.length).toBeGreaterThan(0);
      expect(result.counts.takeovers).toBeGreaterThan(0);
      expect(result.retakenInFlight).toEqual([]);
    },
    RUN_TEST_MS,
  );
});
