/**
 * The rolling upgrade (issue 41): runners and workers of the previous release (built from its git tag,
 * test/helpers/previousRelease.ts) serve a load of turns on one nats-server, and are replaced one by
 * one with the current code's while the load goes on: a current worker starts, an old worker is stopped
 * with SIGTERM, then the second pair; then a current runner starts, an old runner is stopped with
 * SIGTERM, then the second pair (the order docs/operations.md, "Upgrading", gives). The load is the
 * current client's, several sessions conversing turn after turn (test/helpers/turnLoad.ts); some turns
 * finish between each step. Every acked turn is then read back from the event log, and the run holds:
 * nothing lost, nothing run twice (no turn completed twice, no agent answer, model step or tool call
 * recorded twice), zero turn-order violations, every acked turn completed, each turn's log contiguous
 * (seq 0..n-1, ending with TURN_COMPLETED), the old processes exiting 0 on SIGTERM, the old runners
 * running turns before the upgrade and only the current ones after it. It prints the release it built,
 * each step as it begins and the counts.
 *
 * Heavy (it builds the previous release once per commit, cached in the temp directory): it runs in the
 * serial run, `npm run test:cluster` (vitest.config.ts).
 */
import { readFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import type { NatsConnection } from "@nats-io/nats-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ConclaveProcess } from "../../src/cli/childProcess.ts";
import { type ConclaveClient, connect } from "../../src/client/index.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { type PreviousRelease, previousRelease } from "../helpers/previousRelease.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";
import { accountTurns, countsLine, startTurnLoad } from "../helpers/turnLoad.ts";

const nats = useNatsServer();
const processes = useConclaveProcesses(() => nats.url);
/** Sessions conversing at once. */
const SESSIONS = 6;
/** Turns a session has before a new one takes its place: sessions begin under each mix of versions. */
const TURNS_PER_SESSION = 10;
/** Turns finished between two steps of the upgrade. */
const STEP_TURNS = 10;
/** The load's bound: ten steps of turns, each process starting, each old one draining. */
const RUN_BOUND_MS = 240_000;
/** The test's bound: the load, then every acked turn read back. */
const TEST_MS = 330_000;
/** Building the previous release from scratch (extract, maybe `npm ci`, `npm run build`). */
const BUILD_MS = 600_000;
const WORKER_ARGS = ["worker", "--agents", "*", "--services", "scheduler,council,critics,memory"];

let release: PreviousRelease;
const clients: ConclaveClient[] = [];
let observer: NatsConnection;

beforeAll(async () => {
  release = await previousRelease();
  const current = (
    JSON.parse(readFileSync(join(import.meta.dirname, "../../package.json"), "utf8")) as { version: string }
  ).version;
  console.log(
    `upgrade: previous release ${release.version} (commit ${release.commit.slice(0, 7)}, ${release.resolvedBy}) to current ${current}`,
  );
}, BUILD_MS);
afterAll(async () => {
  await Promise.allSettled(clients.map((client) => client.close()));
});

/** A runner or worker of the run, with its name in leases and turn statuses (`<host>:<pid>`, a runner's default). */
interface Member {
  process: ConclaveProcess;
  id: string;
}

describe("a rolling upgrade under load", () => {
  it(
    "runners and workers of the previous release replaced one by one: no turn lost, run twice or out of order",
    async () => {
      const member = (process: ConclaveProcess): Member => ({ process, id: `${hostname()}:${process.child.pid}` });
      const old = (name: string, args: string[]) =>
        processes.spawnRelease(release, `${name}-${release.version}`, args).then(member);
      const current = (name: string, args: string[]) => processes.spawn(`${name}-current`, args).then(member);
      const oldWorkers = await Promise.all([old("worker-1", WORKER_ARGS), old("worker-2", WORKER_ARGS)]);
      const oldRunners = await Promise.all([old("runner-1", ["runner"]), old("runner-2", ["runner"])]);
      for (let i = 0; i < 2; i++) clients.push(await connect({ nc: await nats.connect("client") }));
      observer = await nats.connect("observer");

      const load = startTurnLoad({
        clients,
        sessions: SESSIONS,
        label: "upgrade",
        thinkMs: 0,
        followTimeoutMs: 60_000,
        runBoundMs: RUN_BOUND_MS,
        turnsPerSession: TURNS_PER_SESSION,
      });
      // Each step printed as it begins: a run that times out shows where it stood.
      const step = async <T>(what: string, run: () => Promise<T>): Promise<T> => {
        console.log(
          `upgrade +${Math.round((Date.now() - load.started) / 1_000)} s: ${what} (${load.finished()} turns finished, ${load.inFlight.size} in flight)`,
        );
        return run();
      };
      const progress = () => step(`waiting for ${STEP_TURNS} more turns`, () => load.progress(STEP_TURNS));
      /** How each old process ended on SIGTERM. */
      const exits: string[] = [];
      const stop = (what: string, stopped: Member) =>
        step(`${what} ${stopped.process.name} stopped with SIGTERM`, async () => {
          await stopped.process.stop(30_000);
          const { exitCode, signalCode } = stopped.process.child;
          exits.push(`${stopped.process.name}: ${signalCode ?? `code ${exitCode}`}`);
        });

      await progress();
      const oldEra = load.acks.length;
      const newWorkers: Member[] = [];
      for (const [i, worker] of oldWorkers.entries()) {
        newWorkers.push(await step(`current worker-${i + 1} starts`, () => current(`worker-${i + 1}`, WORKER_ARGS)));
        await progress();
        await stop("old worker", worker);
        await progress();
      }
      const newRunners: Member[] = [];
      for (const [i, runner] of oldRunners.entries()) {
        newRunners.push(await step(`current runner-${i + 1} starts`, () => current(`runner-${i + 1}`, ["runner"])));
        await progress();
        await stop("old runner", runner);
        await progress();
      }
      // Acked once only current processes serve: every one of these runs on a current runner.
      const newEra = load.acks.length;
      await progress();
      await step("stopping the load", () => load.stop());

      const result = await accountTurns(observer, load);
      const ranBy = (from: number, to: number, runners: Member[]) =>
        load.acks
          .slice(from, to)
          .filter((ack) =>
            runners.some((r) => r.id === result.statuses.get(`${ack.session_id}/${ack.turn_id}`)?.runner),
          ).length;
      const byOld = ranBy(0, oldEra, oldRunners);
      const byNewAfter = ranBy(newEra, load.acks.length, newRunners);
      console.log(
        `upgrade ${release.version} to current in ${Math.round((Date.now() - load.started) / 1_000)} s: ${countsLine(result.counts)}; broken logs ${result.broken.length}; slowest turn ${Math.round(result.slowest)} ms; follows timed out ${load.stalled.size}; turns run by old runners before the upgrade ${byOld} of ${oldEra}, by current runners after it ${byNewAfter} of ${load.acks.length - newEra}; SIGTERM exits: ${exits.join(", ")}`,
      );

      expect(load.failures).toEqual([]);
      expect(result.broken).toEqual([]);
      expect(result.outOfOrder).toEqual([]);
      expect(result.increasing).toEqual([]);
      expect(result.stalledDetail).toEqual([]);
      expect(result.retakenInFlight).toEqual([]);
      expect(result.counts).toMatchObject({
        completed: result.counts.submitted,
        lost: 0,
        twice: 0,
        violations: 0,
        callsRepeated: 0,
      });
      expect(result.counts.submitted).toBeGreaterThanOrEqual(10 * STEP_TURNS);
      expect(exits).toEqual([...oldWorkers, ...oldRunners].map((m) => `${m.process.name}: code 0`));
      expect(byOld).toBe(oldEra);
      expect(byNewAfter).toBe(load.acks.length - newEra);
    },
    TEST_MS,
  );
});
