/**
 * The cluster failure run shared by test/cluster/failover.test.ts (a node is
 * killed) and test/cluster/partition.test.ts (a node's link is cut): three
 * runners (one on each node) and three workers spread over a three-node R3
 * cluster, a steady, light load of turns over a few sessions, a fault on one
 * node then on another (each healed before the next), and the accounting of
 * every acked turn afterwards (the load and the accounting: ./turnLoad.ts).
 * Each step waits for progress (turns finished) or for the cluster to be
 * healthy again, never for a guessed delay.
 */
import { expect } from "vitest";
import type { ConclaveClient } from "../../src/client/index.ts";
import type { NatsClusterNode } from "../../src/nats/cluster.ts";
import { readClusterStatus } from "../../src/nats/clusterStatus.ts";
import type { useNatsCluster } from "./natsCluster.ts";
import type { useConclaveProcesses } from "./processes.ts";
import { accountTurns, countsLine, startTurnLoad } from "./turnLoad.ts";

const SESSIONS = 4;
/** A session's pause between its turns: keeps the load at a few turns a second (two cores, the suite in parallel). */
const THINK_MS = 300;
/** Turns finished between two steps of the run. */
export const STEP_TURNS = 8;
/**
 * How long a client follows one turn, as the fault run's clients do (test/cluster/faults.test.ts).
 * Generous: this run promises no turn lost or run twice, not a latency. A heal holds every turn
 * while the cut node's groups elect again (the slowest turns of passing runs took 41–59 s), and
 * the printed slowest turn says how long it was.
 */
const FOLLOW_TIMEOUT_MS = 90_000;
/** The whole run's bound: the load must end within it. */
const RUN_BOUND_MS = 180_000;
/** The whole test's bound (the run, a last follow, then reading every turn back). */
export const CLUSTER_RUN_TEST_MS = 300_000;

type NatsCluster = ReturnType<typeof useNatsCluster>;

/** Starts the runners and workers of the run, each given one node's URL (`setNodeUrl` before each spawn). */
export async function spawnSpreadProcesses(
  nats: NatsCluster,
  processes: ReturnType<typeof useConclaveProcesses>,
  setNodeUrl: (url: string) => void,
): Promise<void> {
  const layout: [string, string[], number][] = [
    ["worker-agents", ["worker", "--agents", "*"], 0],
    ["worker-both", ["worker", "--agents", "*", "--services", "scheduler,council,critics,memory"], 1],
    ["worker-core", ["worker", "--services", "scheduler,council,critics,memory"], 2],
    ["runner-1", ["runner"], 0],
    ["runner-2", ["runner"], 1],
    ["runner-3", ["runner"], 2],
  ];
  for (const [name, args, node] of layout) {
    setNodeUrl(nats.node(node).url);
    await processes.spawn(name, args);
  }
}

/** A fault on one node, and how it ends. */
export interface NodeFault {
  /** What it does, in the printed line: `killed`, `cut off`. */
  verb: string;
  /** Starts the fault on `node`; resolves once it is in place. */
  begin(node: NatsClusterNode): Promise<void>;
  /** Ends it; the run then waits for the cluster to be healthy. */
  end(node: NatsClusterNode): Promise<void>;
}

export interface ClusterRunCounts {
  submitted: number;
  completed: number;
  lost: number;
  duplicated: number;
  takeovers: number;
  /** A session's turn started before its previous turn completed. */
  violations: number;
  /** Agent answers, model steps or tool calls a turn's log records twice (printed, not held: see turnLoad.ts). */
  callsRepeated: number;
}

export interface ClusterRunResult {
  counts: ClusterRunCounts;
  failures: string[];
  /** Turns whose log is not contiguous or does not end with TURN_COMPLETED. */
  broken: string[];
  /** Turns taken over more than once. */
  retakenInFlight: string[];
  /** Follows that timed out, with how long after its submission the turn was done. */
  stalledDetail: string[];
  /** Acked turn ids not increasing within a session. */
  increasing: string[];
  /** Turns started before the previous turn of their session completed. */
  outOfOrder: string[];
  /** The printed summary. */
  line: string;
}

/**
 * Runs the load, puts `fault` on the node leading the turn WAL, ends it, then on the node
 * leading the event log (another one), ends it, and reads every acked turn back. Nodes named
 * in `spare` are never faulted (the clients' node, when they must keep theirs).
 */
export async function runClusterFaults(options: {
  nats: NatsCluster;
  clients: readonly ConclaveClient[];
  fault: NodeFault;
  /** Names the run in the printed line and the sessions: `failover`, `partition`. */
  label: string;
  spare?: readonly string[];
  /**
   * How long the cluster may take to be healthy again after a fault ends. Default 30 s; a healed
   * partition takes longer than a restart (the cut node's streams hold elections on its return).
   */
  healMs?: number;
}): Promise<ClusterRunResult> {
  const { nats, clients, fault, label, spare = [], healMs = 30_000 } = options;
  const observer = await nats.connect("observer");
  await nats.healthy(observer);
  const load = startTurnLoad({
    clients,
    sessions: SESSIONS,
    label,
    thinkMs: THINK_MS,
    followTimeoutMs: FOLLOW_TIMEOUT_MS,
    runBoundMs: RUN_BOUND_MS,
  });
  /** Turns acked and not yet finished when a fault begins. */
  const inFlightAtFault = new Set<string>();

  /** Faults the node leading `stream` (another one when it leads it but must be spared), with turns under way. */
  const faultLeaderOf = async (stream: string, spared: readonly string[]) => {
    const status = await readClusterStatus(observer);
    const leader = status.stores.find((store) => store.stream === stream)?.leader;
    const name =
      leader && !spared.includes(leader) ? leader : status.nodes.find((node) => !spared.includes(node.name))!.name;
    const node = nats.cluster.nodes.find((candidate) => candidate.name === name)!;
    for (const key of load.inFlight) inFlightAtFault.add(key);
    await fault.begin(node);
    return node;
  };

  // Each step is printed as it begins: a run that times out shows where it stood.
  const step = async <T>(what: string, run: () => Promise<T>): Promise<T> => {
    console.log(
      `cluster ${label} run +${Math.round((Date.now() - load.started) / 1_000)} s: ${what} (${load.finished()} turns finished, ${load.inFlight.size} in flight)`,
    );
    return run();
  };
  const progress = () => step(`waiting for ${STEP_TURNS} more turns`, () => load.progress(STEP_TURNS));
  const healthy = () => step("waiting for the cluster to be healthy", () => nats.healthy(observer, healMs));

  await progress();
  const first = await step("fault on the WAL's leader", () => faultLeaderOf("CONCLAVE_TURNS", spare));
  await progress(); // turns go on with two nodes of three
  await step(`fault on ${first.name} ends`, () => fault.end(first));
  await healthy();
  await progress();
  const second = await step("fault on the event log's leader", () =>
    faultLeaderOf("CONCLAVE_EVENTS_0", [...spare, first.name]),
  );
  await progress();
  await step(`fault on ${second.name} ends`, () => fault.end(second));
  await healthy();
  await progress();
  await step("stopping the load", () => load.stop());

  // Every acked turn settles, and its log holds it exactly once.
  const account = await accountTurns(observer, load);
  const { twice, ...rest } = account.counts;
  const counts: ClusterRunCounts = { ...rest, duplicated: twice };
  const { stalledDetail } = account;
  const line = `cluster ${label} run in ${Math.round((Date.now() - load.started) / 1_000)} s (${fault.verb} ${first.name}, then ${second.name}; ${inFlightAtFault.size} turns in flight at the faults): ${countsLine(account.counts)}; slowest turn ${Math.round(account.slowest)} ms; turn ids skipped by refused submissions ${account.skipped}; follows timed out ${load.stalled.size}${stalledDetail.length ? ` (${stalledDetail.join("; ")})` : ""}`;
  console.log(line);
  return {
    counts,
    failures: load.failures,
    broken: account.broken,
    retakenInFlight: account.retakenInFlight,
    stalledDetail,
    increasing: account.increasing,
    outOfOrder: account.outOfOrder,
    line,
  };
}

/** What the run promises: zero turns lost or run twice, contiguous logs, at most one takeover a turn. */
export function expectCleanRun(result: ClusterRunResult): void {
  const { counts } = result;
  expect(result.failures).toEqual([]);
  expect(result.broken).toEqual([]);
  expect(result.retakenInFlight).toEqual([]);
  expect(result.outOfOrder).toEqual([]);
  expect(counts).toMatchObject({ completed: counts.submitted, lost: 0, duplicated: 0, violations: 0 });
  expect(counts.submitted).toBeGreaterThanOrEqual(5 * STEP_TURNS);
  expect(result.stalledDetail).toEqual([]);
  // No acked turn twice, none out of order (ids refused before they were stored may be skipped).
  expect(result.increasing).toEqual([]);
}

/** The kill variant's fault: SIGKILL (a crash), then the node started again on its store. */
export const killNode: NodeFault = {
  verb: "killed",
  begin: (node) => node.kill("SIGKILL"),
  end: (node) => node.start(),
};
