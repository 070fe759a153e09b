/**
 * The cluster failure run shared by test/cluster/failover.test.ts (a node is
 * killed) and test/cluster/partition.test.ts (a node's link is cut): two
 * runners and three workers spread over a three-node R3 cluster, a steady,
 * light load of turns over a few sessions, a fault on one node then on
 * another (each healed before the next), and the accounting of every acked
 * turn afterwards. Each step waits for progress (turns finished) or for the
 * cluster to be healthy again, never for a guessed delay.
 */
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { expect } from "vitest";
import { type ConclaveClient, TurnTimeoutError } from "../../src/client/index.ts";
import type { EngineEvent } from "../../src/contracts/events.ts";
import type { TurnAck } from "../../src/contracts/turn.ts";
import { readEvents } from "../../src/eventlog/reader.ts";
import type { NatsClusterNode } from "../../src/nats/cluster.ts";
import { readClusterStatus } from "../../src/nats/clusterStatus.ts";
import type { useNatsCluster } from "./natsCluster.ts";
import type { useConclaveProcesses } from "./processes.ts";
import { settledStatus } from "./turnStatus.ts";

const SESSIONS = 4;
/** A session's pause between its turns: keeps the load at a few turns a second (two cores, the suite in parallel). */
const THINK_MS = 300;
/** Turns finished between two steps of the run. */
export const STEP_TURNS = 8;
/**
 * How long a client follows one turn. Generous: a fault on the node leading the WAL's consumer
 * can hold turns for up to about 40 s (the runners' pulls wait out their heartbeats), and the
 * printed latency says how long it was.
 */
const FOLLOW_TIMEOUT_MS = 60_000;
/** The whole run's bound: the load must end within it. */
const RUN_BOUND_MS = 180_000;
/** The whole test's bound (the run, then reading every turn back). */
export const CLUSTER_RUN_TEST_MS = 240_000;

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
  const started = Date.now();
  const observer = await nats.connect("observer");
  await nats.healthy(observer);
  const acks: TurnAck[] = [];
  const failures: string[] = [];
  /** Follows that gave up on a turn (TurnTimeoutError), with when each was submitted. */
  const stalled = new Map<string, number>();
  const submittedAt = new Map<string, number>();
  /** Turns acked and not yet finished: those in flight when a fault begins. */
  const inFlight = new Set<string>();
  const inFlightAtFault = new Set<string>();
  let finished = 0;
  let stopping = false;
  const waiters: { count: number; resolve: () => void }[] = [];
  const progressed = () => {
    finished += 1;
    for (const waiter of waiters.filter((w) => finished >= w.count)) {
      waiters.splice(waiters.indexOf(waiter), 1);
      waiter.resolve();
    }
  };
  /** Resolves once `more` turns have finished from now. */
  const progress = (more: number) => {
    const count = finished + more;
    return new Promise<void>((resolve) => waiters.push({ count, resolve }));
  };

  /** One session's conversation, turn after turn until the run stops. */
  const converse = async (session: string, client: ConclaveClient) => {
    for (let turn = 1; !stopping; turn++) {
      let ack: TurnAck | null = null;
      let stream: ReturnType<ConclaveClient["submit"]> | null = null;
      while (!ack) {
        if (Date.now() - started > RUN_BOUND_MS) throw new Error(`${session}: could not submit turn ${turn}`);
        stream = client.submit(session, `How do I plan deadline number ${turn}?`, {
          idempotencyKey: `${session}-${turn}`,
          timeoutMs: FOLLOW_TIMEOUT_MS,
        });
        ack = await stream.ack.catch(() => null);
        // No ack (the node it asked went away): as any client, ask again with the same key.
        if (!ack) await new Promise((resolve) => setTimeout(resolve, 250));
      }
      const key = `${ack.session_id}/${ack.turn_id}`;
      acks.push(ack);
      submittedAt.set(key, Date.now());
      inFlight.add(key);
      try {
        await stream!.result;
      } catch (error) {
        if (error instanceof TurnTimeoutError) stalled.set(key, submittedAt.get(key)!);
        else failures.push(`${key}: ${String(error)}`);
      }
      inFlight.delete(key);
      progressed();
      await new Promise((resolve) => setTimeout(resolve, THINK_MS));
    }
  };
  const load = Promise.all(
    Array.from({ length: SESSIONS }, (_, i) => converse(`${label}-${i}`, clients[i % clients.length]!)),
  );

  /** Faults the node leading `stream` (another one when it leads it but must be spared), with turns under way. */
  const faultLeaderOf = async (stream: string, spared: readonly string[]) => {
    const status = await readClusterStatus(observer);
    const leader = status.stores.find((store) => store.stream === stream)?.leader;
    const name =
      leader && !spared.includes(leader) ? leader : status.nodes.find((node) => !spared.includes(node.name))!.name;
    const node = nats.cluster.nodes.find((candidate) => candidate.name === name)!;
    for (const key of inFlight) inFlightAtFault.add(key);
    await fault.begin(node);
    return node;
  };

  await progress(STEP_TURNS);
  const first = await faultLeaderOf("CONCLAVE_TURNS", spare);
  await progress(STEP_TURNS); // turns go on with two nodes of three
  await fault.end(first);
  await nats.healthy(observer, healMs);
  await progress(STEP_TURNS);
  const second = await faultLeaderOf("CONCLAVE_EVENTS", [...spare, first.name]);
  await progress(STEP_TURNS);
  await fault.end(second);
  await nats.healthy(observer, healMs);
  await progress(STEP_TURNS);
  stopping = true;
  await load;

  // Every acked turn settles, and its log holds it exactly once.
  const js = jetstream(observer);
  const jsm = await jetstreamManager(observer);
  const counts: ClusterRunCounts = { submitted: acks.length, completed: 0, lost: 0, duplicated: 0, takeovers: 0 };
  const broken: string[] = [];
  const retakenInFlight: string[] = [];
  const stalledDetail: string[] = [];
  let slowest = 0;
  for (const ack of acks) {
    const key = `${ack.session_id}/${ack.turn_id}`;
    const status = await settledStatus(observer, ack.session_id, ack.turn_id, 60_000).catch(() => null);
    const events: EngineEvent[] = await readEvents(js, jsm, ack.session_id, ack.turn_id);
    const terminal = events.filter((event) => event.kind === "TURN_COMPLETED").length;
    if (terminal === 0 || status?.status !== "done") counts.lost += 1;
    else if (terminal > 1) counts.duplicated += 1;
    else counts.completed += 1;
    const takeovers = events.filter((event) => event.kind === "TURN_RESUMED").length;
    counts.takeovers += takeovers;
    if (takeovers > 1) retakenInFlight.push(`${key} (${takeovers} takeovers)`);
    const end = events.find((event) => event.kind === "TURN_COMPLETED");
    if (end) slowest = Math.max(slowest, end.ts_monotonic - submittedAt.get(key)!);
    if (stalled.has(key))
      stalledDetail.push(
        `${key} done ${end ? Math.round(end.ts_monotonic - stalled.get(key)!) : "never"} ms after its submission`,
      );
    const contiguous = events.every((event, index) => event.seq === index);
    if (!contiguous || events.at(-1)?.kind !== "TURN_COMPLETED") broken.push(key);
  }
  // Turn ids a runner gave to submissions it could not store (the WAL electing a leader): never acked, never run.
  let skipped = 0;
  const increasing: string[] = [];
  for (let i = 0; i < SESSIONS; i++) {
    const turns = acks.filter((ack) => ack.session_id === `${label}-${i}`).map((ack) => ack.turn_id);
    turns.forEach((turn, index) => {
      const previous = index === 0 ? 0 : turns[index - 1]!;
      if (turn <= previous) increasing.push(`${label}-${i}: turn ${turn} after ${previous}`);
      else skipped += turn - previous - 1;
    });
  }
  const line = `cluster ${label} run in ${Math.round((Date.now() - started) / 1_000)} s (${fault.verb} ${first.name}, then ${second.name}; ${inFlightAtFault.size} turns in flight at the faults): submitted ${counts.submitted}, completed ${counts.completed}, lost ${counts.lost}, duplicated ${counts.duplicated}, takeovers ${counts.takeovers}; slowest turn ${Math.round(slowest)} ms; turn ids skipped by refused submissions ${skipped}; follows timed out ${stalled.size}${stalledDetail.length ? ` (${stalledDetail.join("; ")})` : ""}`;
  console.log(line);
  return { counts, failures, broken, retakenInFlight, stalledDetail, increasing, line };
}

/** What the run promises: zero turns lost or run twice, contiguous logs, at most one takeover a turn. */
export function expectCleanRun(result: ClusterRunResult): void {
  const { counts } = result;
  expect(result.failures).toEqual([]);
  expect(result.broken).toEqual([]);
  expect(result.retakenInFlight).toEqual([]);
  expect(counts).toMatchObject({ completed: counts.submitted, lost: 0, duplicated: 0 });
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
