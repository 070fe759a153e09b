/**
 * The cluster failure run: a three-node NATS cluster with every stream and
 * bucket R3; two runners and three workers, spread over the nodes (each given
 * one node's URL); a steady, light load of turns over a few sessions. The node
 * leading the turn WAL is killed (SIGKILL) and later restarted, then the node
 * leading the event log. Each step waits for progress (turns finished) or for
 * the cluster to be healthy again, never for a guessed delay. Promised: zero
 * turns lost or run twice, every session's log contiguous with one terminal
 * event per turn, and the turns in flight at a kill complete after at most one
 * takeover. The counts are printed.
 */
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ConclaveClient, connect, TurnTimeoutError } from "../../src/client/index.ts";
import type { EngineEvent } from "../../src/contracts/events.ts";
import type { TurnAck } from "../../src/contracts/turn.ts";
import { readEvents } from "../../src/eventlog/reader.ts";
import { readClusterStatus } from "../../src/nats/clusterStatus.ts";
import { useNatsCluster } from "../helpers/natsCluster.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";
import { settledStatus } from "../helpers/turnStatus.ts";

const SESSIONS = 4;
/** A session's pause between its turns: keeps the load at a few turns a second (two cores, the suite in parallel). */
const THINK_MS = 300;
/** Turns finished between two steps of the run. */
const STEP_TURNS = 8;
/**
 * How long a client follows one turn. Generous: a kill of the node leading the WAL's consumer
 * can hold turns for up to about 40 s (the runners' pulls wait out their heartbeats), and the
 * printed latency says how long it was.
 */
const FOLLOW_TIMEOUT_MS = 60_000;
/** The whole run's bound: the load must end within it. */
const RUN_BOUND_MS = 180_000;

const nats = useNatsCluster(3);
/** The URL the next process spawned is given: its node. */
let nodeUrl = "";
const processes = useConclaveProcesses(
  () => nodeUrl,
  () => ({ CONCLAVE_REPLICAS: "3" }),
);
const clients: ConclaveClient[] = [];

beforeAll(async () => {
  const layout: [string, string[], number][] = [
    ["worker-agents", ["worker", "--agents", "*"], 0],
    ["worker-both", ["worker", "--agents", "*", "--services", "scheduler,council,critics,memory"], 1],
    ["worker-core", ["worker", "--services", "scheduler,council,critics,memory"], 2],
    ["runner-1", ["runner"], 0],
    ["runner-2", ["runner"], 1],
  ];
  for (const [name, args, node] of layout) {
    nodeUrl = nats.node(node).url;
    await processes.spawn(name, args);
  }
  // Clients as a user's application makes them, given every node.
  for (let i = 0; i < 2; i++) clients.push(await connect({ servers: nats.url }));
}, 90_000);
afterAll(async () => {
  await Promise.allSettled(clients.map((client) => client.close()));
});

interface Counts {
  submitted: number;
  completed: number;
  lost: number;
  duplicated: number;
  takeovers: number;
}

describe("a three-node cluster losing a node, then another", () => {
  it("completes every turn exactly once, with at most one takeover each", async () => {
    const started = Date.now();
    const observer = await nats.connect("observer");
    await nats.healthy(observer);
    const acks: TurnAck[] = [];
    const failures: string[] = [];
    /** Follows that gave up on a turn (TurnTimeoutError), with when each was submitted. */
    const stalled = new Map<string, number>();
    const submittedAt = new Map<string, number>();
    /** Turns acked and not yet finished: those in flight when a node is killed. */
    const inFlight = new Set<string>();
    const inFlightAtKill = new Set<string>();
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
      Array.from({ length: SESSIONS }, (_, i) => converse(`failover-${i}`, clients[i % clients.length]!)),
    );

    /** Kills the node leading `stream` (another than `spare`'s when it leads it), with turns under way. */
    const killLeaderOf = async (stream: string, spare?: string) => {
      const status = await readClusterStatus(observer);
      const leader = status.stores.find((store) => store.stream === stream)?.leader;
      const name = leader && leader !== spare ? leader : status.nodes.find((node) => node.name !== spare)!.name;
      const node = nats.cluster.nodes.find((candidate) => candidate.name === name)!;
      for (const key of inFlight) inFlightAtKill.add(key);
      await node.kill("SIGKILL");
      return node;
    };

    await progress(STEP_TURNS);
    const first = await killLeaderOf("CONCLAVE_TURNS");
    await progress(STEP_TURNS); // turns go on with two nodes of three
    await first.start();
    await nats.healthy(observer);
    await progress(STEP_TURNS);
    const second = await killLeaderOf("CONCLAVE_EVENTS", first.name);
    await progress(STEP_TURNS);
    await second.start();
    await nats.healthy(observer);
    await progress(STEP_TURNS);
    stopping = true;
    await load;

    // Every acked turn settles, and its log holds it exactly once.
    const js = jetstream(observer);
    const jsm = await jetstreamManager(observer);
    const counts: Counts = { submitted: acks.length, completed: 0, lost: 0, duplicated: 0, takeovers: 0 };
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
      const turns = acks.filter((ack) => ack.session_id === `failover-${i}`).map((ack) => ack.turn_id);
      turns.forEach((turn, index) => {
        const previous = index === 0 ? 0 : turns[index - 1]!;
        if (turn <= previous) increasing.push(`failover-${i}: turn ${turn} after ${previous}`);
        else skipped += turn - previous - 1;
      });
    }
    console.log(
      `cluster failover run in ${Math.round((Date.now() - started) / 1_000)} s (killed ${first.name}, then ${second.name}; ${inFlightAtKill.size} turns in flight at the kills): submitted ${counts.submitted}, completed ${counts.completed}, lost ${counts.lost}, duplicated ${counts.duplicated}, takeovers ${counts.takeovers}; slowest turn ${Math.round(slowest)} ms; turn ids skipped by refused submissions ${skipped}; follows timed out ${stalled.size}${stalledDetail.length ? ` (${stalledDetail.join("; ")})` : ""}`,
    );

    expect(failures).toEqual([]);
    expect(broken).toEqual([]);
    expect(retakenInFlight).toEqual([]);
    expect(counts).toMatchObject({ completed: counts.submitted, lost: 0, duplicated: 0 });
    expect(counts.submitted).toBeGreaterThanOrEqual(5 * STEP_TURNS);
    expect(stalledDetail).toEqual([]);
    // No acked turn twice, none out of order (ids refused before they were stored may be skipped).
    expect(increasing).toEqual([]);
    // The processes rode it out, and the cluster is whole again.
    for (const node of nats.cluster.nodes) expect(node.process, node.name).not.toBeNull();
    const after = await clients[0]!.submit("failover-after", "hello again").result;
    expect(after.response.length).toBeGreaterThan(0);
  }, 240_000);
});
