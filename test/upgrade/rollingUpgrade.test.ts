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
 * running turns before the upgrade and only the current ones after it. A second run rolls back the
 * same way (current processes replaced one by one by the previous release's) and holds the same. Each
 * prints the release it built, each step as it begins and the counts.
 *
 * Heavy (it builds the previous release once per commit, cached in the temp directory): it runs in the
 * serial run, `npm run test:cluster` (vitest.config.ts).
 */
import { readFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import type { NatsConnection } from "@nats-io/nats-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { ConclaveProcess } from "../../src/cli/childProcess.ts";
import { type ConclaveClient, connect } from "../../src/client/index.ts";
import { FORMAT_VERSION } from "../../src/contracts/format.ts";
import { useNatsServer } from "../helpers/nats.ts";
import {
  type ConclaveBuild,
  CURRENT_BUILD,
  type LoggedProblem,
  type PreviousRelease,
  previousRelease,
} from "../helpers/previousRelease.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";
import { accountTurns, countsLine, startTurnLoad } from "../helpers/turnLoad.ts";

const nats = useNatsServer();
// Every process stores each event alone, as 0.2.0 reads them (docs/operations.md, "Upgrading").
const processes = useConclaveProcesses(
  () => nats.url,
  () => ({ CONCLAVE_EVENT_BATCHES: "off" }),
);
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
/**
 * The warnings that say a process met a stored record or a message it could not read (a newer format
 * refused, a record left out, quarantined or skipped): any of them fails the run, as any error does.
 */
const UNREADABLE =
  /format_too_new|reads formats up to|is not a valid|is not a |quarantin|corrupt|skipped a message|ignored an/i;
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
  for (let i = 0; i < 2; i++) clients.push(await connect({ nc: await nats.connect("client") }));
  observer = await nats.connect("observer");
}, BUILD_MS);
afterAll(async () => {
  await Promise.allSettled(clients.map((client) => client.close()));
});

/** A runner or worker of the run, with its name in leases and turn statuses (`<host>:<pid>`, a runner's default). */
interface Member {
  process: ConclaveProcess;
  id: string;
}
/** The processes a test leaves serving, stopped after it. */
let serving: Member[] = [];
afterEach(async () => {
  await Promise.allSettled(serving.map((m) => m.process.stop(5_000)));
  serving = [];
});

/** Which release's processes a run starts with and which it ends with. */
type Direction = "upgrade" | "rollback";

/**
 * Two runners and two workers of one release under load, replaced one by one with the other's (workers
 * first, then runners: each new one ready before an old one stops), then every acked turn read back;
 * prints each step and the counts, and holds them.
 */
async function rollingReplace(direction: Direction): Promise<void> {
  /** Every warning and error the processes log. */
  const problems: LoggedProblem[] = [];
  const fatal = (p: LoggedProblem) => p.level === "error" || UNREADABLE.test(p.msg);
  /** Rejects at the first fatal problem logged: the run stops there, naming it, rather than at its bound. */
  let failFast: (error: Error) => void = () => {};
  const failed = new Promise<never>((_, reject) => {
    failFast = reject;
  });
  failed.catch(() => {});
  const [fromBuild, toBuild] = direction === "upgrade" ? [release, CURRENT_BUILD] : [CURRENT_BUILD, release];
  const [fromName, toName] = [fromBuild.version, toBuild.version];
  const starter = (build: ConclaveBuild) => async (name: string, args: string[]) => {
    const started = await processes.spawnBuild(build, `${name}-${build.version}`, args, (p) => {
      problems.push(p);
      if (fatal(p)) failFast(new Error(`${p.process} logged a ${p.level}: ${p.msg}`));
    });
    return { process: started, id: `${hostname()}:${started.child.pid}` };
  };
  const [from, to] = [starter(fromBuild), starter(toBuild)];
  const oldWorkers = await Promise.all([from("worker-1", WORKER_ARGS), from("worker-2", WORKER_ARGS)]);
  const oldRunners = await Promise.all([from("runner-1", ["runner"]), from("runner-2", ["runner"])]);
  serving.push(...oldWorkers, ...oldRunners);

  const load = startTurnLoad({
    clients,
    sessions: SESSIONS,
    label: direction,
    thinkMs: 0,
    followTimeoutMs: 60_000,
    runBoundMs: RUN_BOUND_MS,
    turnsPerSession: TURNS_PER_SESSION,
  });
  // Each step printed as it begins: a run that times out shows where it stood.
  const step = async <T>(what: string, run: () => Promise<T>): Promise<T> => {
    console.log(
      `${direction} +${Math.round((Date.now() - load.started) / 1_000)} s: ${what} (${load.finished()} turns finished, ${load.inFlight.size} in flight)`,
    );
    return run();
  };
  const progress = () =>
    step(`waiting for ${STEP_TURNS} more turns`, () => Promise.race([load.progress(STEP_TURNS), failed]));
  /** How each replaced process ended on SIGTERM. */
  const exits: string[] = [];
  const replace = async (kind: string, i: number, old: Member, args: string[]): Promise<Member> => {
    const started = await step(`${toName} ${kind}-${i + 1} starts`, () => to(`${kind}-${i + 1}`, args));
    serving.push(started);
    await progress();
    await step(`${fromName} ${old.process.name} stopped with SIGTERM`, async () => {
      await old.process.stop(30_000);
      const { exitCode, signalCode } = old.process.child;
      exits.push(`${old.process.name}: ${signalCode ?? `code ${exitCode}`}`);
    });
    await progress();
    return started;
  };

  const newRunners: Member[] = [];
  let oldEra = 0;
  let newEra = 0;
  try {
    await progress();
    oldEra = load.acks.length;
    for (const [i, worker] of oldWorkers.entries()) await replace("worker", i, worker, WORKER_ARGS);
    for (const [i, runner] of oldRunners.entries()) newRunners.push(await replace("runner", i, runner, ["runner"]));
    // Acked once only the new processes serve: every one of these runs on a new runner.
    newEra = load.acks.length;
    await progress();
  } catch (error) {
    // The sessions end their current turn and stop (not awaited: a stuck one ends at the load's bound).
    load.stop().catch(() => {});
    throw error;
  }
  await step("stopping the load", () => load.stop());

  const result = await accountTurns(observer, load);
  const ranBy = (from: number, to: number, runners: Member[]) =>
    load.acks
      .slice(from, to)
      .filter((ack) => runners.some((r) => r.id === result.statuses.get(`${ack.session_id}/${ack.turn_id}`)?.runner))
      .length;
  const byOld = ranBy(0, oldEra, oldRunners);
  const byNew = ranBy(newEra, load.acks.length, newRunners);
  // Which formats the two releases wrote (`0`: no `v`, as 0.2.0 and before): both, in each direction.
  const formats = Object.entries(result.formats)
    .map(([format, count]) => `${format}: ${count}`)
    .join(", ");
  console.log(
    `${direction} ${fromName} to ${toName} in ${Math.round((Date.now() - load.started) / 1_000)} s: ${countsLine(result.counts)}; broken logs ${result.broken.length}; slowest turn ${Math.round(result.slowest)} ms; follows timed out ${load.stalled.size}; turns run by ${fromName} runners before ${byOld} of ${oldEra}, by ${toName} runners after ${byNew} of ${load.acks.length - newEra}; SIGTERM exits: ${exits.join(", ")}; logged ${problems.filter((p) => p.level === "error").length} errors, ${problems.filter((p) => p.level === "warn").length} warnings; events stored by format ${formats}`,
  );
  for (const problem of new Set(problems.map((p) => `${p.process} ${p.level}: ${p.msg}`))) console.log(`  ${problem}`);

  expect(load.failures).toEqual([]);
  expect(Object.keys(result.formats).sort()).toEqual(["0", String(FORMAT_VERSION)]);
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
  // A record or message one version cannot read shows as an error or a warning that it left one out.
  expect(problems.filter((p) => p.level === "error" || UNREADABLE.test(p.msg))).toEqual([]);
  expect(byOld).toBe(oldEra);
  expect(byNew).toBe(load.acks.length - newEra);
}

describe("a rolling upgrade under load", () => {
  it(
    "runners and workers of the previous release replaced one by one with current ones: no turn lost, run twice or out of order",
    () => rollingReplace("upgrade"),
    TEST_MS,
  );

  it(
    "rolled back the same way, current processes replaced by the previous release's: no turn lost, run twice or out of order",
    () => rollingReplace("rollback"),
    TEST_MS,
  );
});
