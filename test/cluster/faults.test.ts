/**
 * A Jepsen-style fault run (issue 34): on a three-node R3 cluster (each node in its own network namespace
 * where that is possible), three runners and three workers serve a steady load while a nemesis, driven by a
 * seeded random generator, SIGKILLs and restarts nats nodes, cuts and heals their links, and SIGKILLs and
 * respawns runners and workers, for a bounded time. As in the hostile run, a cut goes to the node leading the
 * JetStream meta group (else the event log, else the WAL) and lasts while the others finish several turns;
 * which node that is depends on the cluster at the time; a seed fixes the faults' kinds and the processes
 * killed with them.
 * Clients behave as the hostile run's did: each submission carries an idempotency key, and a client that
 * gets no ack asks again with the same key.
 *
 * Then a checker reads every session's history and asserts:
 * - at most one turn per idempotency key (a turn that ran whose id no ack named is an extra execution);
 * - every acknowledged turn completed, once;
 * - each session's turns in order (turn N+1 started after turn N ended, by stream position) and each
 *   turn's log contiguous;
 * - no client gave up on a turn that completed.
 * It prints the seed and its counts. CI runs the fixed seed; `CONCLAVE_FAULT_SEED=random` (or a number)
 * runs another.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ConclaveProcess } from "../../src/cli/childProcess.ts";
import { type ConclaveClient, connect, type EngineEvent } from "../../src/client/index.ts";
import type { NatsClusterNode } from "../../src/nats/cluster.ts";
import { readClusterStatus } from "../../src/nats/clusterStatus.ts";
import { seededRandom } from "../helpers/fuzz.ts";
import { useNatsCluster } from "../helpers/natsCluster.ts";
import { type NetnsCluster, netnsSupport, startNetnsCluster } from "../helpers/netns.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";
import { readStatus, settledStatus } from "../helpers/turnStatus.ts";

/**
 * The seed CI runs, a regression case: on c711eae (the intake released a key's reservation after an
 * ambiguous WAL write and said "submit again") it reproduced 560 extra executions (six keys, one a
 * session, each run 83 to 105 times) and 218 turns out of order; current main runs it clean.
 */
const FIXED_SEED = 89;
const SEED =
  process.env.CONCLAVE_FAULT_SEED === "random"
    ? Math.floor(Math.random() * 2 ** 31)
    : Number(process.env.CONCLAVE_FAULT_SEED ?? FIXED_SEED);
const SESSIONS = 6;
/**
 * How many faults the nemesis makes, one after another (process kills may overlap a node's fault): a
 * count, not a time, so a seed makes the same faults however slow the machine (a cut takes about a minute).
 */
const FAULTS = 3;
/** The load's bound: a client still without an ack then gives up on its key (and the checker says so). */
const RUN_BOUND_MS = 300_000;
const TEST_MS = 540_000;
/** How long after the load stops every acked turn has to settle, in all. */
const SETTLE_MS = 60_000;
/** A session's pause between turns: a few turns a second over the whole cluster, on two cores. */
const THINK_MS = 250;
/** Turns that finish while a node is cut off: long enough for its groups to elect leaders elsewhere and work on. */
const CUT_TURNS = SESSIONS * 3;
/**
 * A process that exits while starting (JetStream still electing after a heal) is started again, a second
 * later, then up to 5 s apart (as `conclave up` does, which never gives up), for at most this long.
 */
const SPAWN_PATIENCE_MS = 120_000;

const support = await netnsSupport();
if (!support.available)
  console.log(`network namespaces are unavailable (${support.reason}): the nemesis cuts no links`);
let network: NetnsCluster | undefined;
const nats = useNatsCluster(
  3,
  support.available
    ? async () => {
        network = await startNetnsCluster(3);
        return network.cluster;
      }
    : undefined,
);
let nodeUrl = "";
const processes = useConclaveProcesses(
  () => nodeUrl,
  () => ({ CONCLAVE_REPLICAS: "3" }),
);
/** The node the clients use: never faulted (they stand for applications that keep their own link). */
const CLIENTS_NODE = 2;
const clients: ConclaveClient[] = [];

interface Served {
  name: string;
  args: string[];
  node: number;
  process?: ConclaveProcess;
}
const served: Served[] = [
  { name: "runner-a", args: ["runner"], node: 0 },
  { name: "runner-b", args: ["runner"], node: 1 },
  { name: "runner-c", args: ["runner"], node: 2 },
  { name: "worker-a", args: ["worker", "--agents", "*", "--services", "scheduler,council,critics,memory"], node: 0 },
  { name: "worker-b", args: ["worker", "--agents", "*", "--services", "scheduler,council,critics,memory"], node: 1 },
  { name: "worker-c", args: ["worker", "--agents", "*", "--services", "scheduler,council,critics,memory"], node: 2 },
];
let spawned = 0;
/** Starts `entry` on its node; one that dies while starting (its node electing) is started again, as `up` does. */
async function spawn(entry: Served): Promise<void> {
  nodeUrl = nats.node(entry.node).url;
  const deadline = Date.now() + SPAWN_PATIENCE_MS;
  for (let pause = 1_000; ; pause = Math.min(pause * 2, 5_000)) {
    try {
      entry.process = await processes.spawn(`${entry.name}-${++spawned}`, entry.args);
      return;
    } catch (error) {
      if (Date.now() + pause > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, pause));
    }
  }
}

beforeAll(async () => {
  for (const entry of served) await spawn(entry);
  const servers = support.available ? nats.node(CLIENTS_NODE).url : nats.url;
  for (let i = 0; i < 2; i++) clients.push(await connect({ servers }));
}, 120_000);
afterAll(async () => {
  await Promise.allSettled(clients.map((client) => client.close()));
});

/** One key's fate, as its client saw it. */
interface KeyRecord {
  session: string;
  key: string;
  turnId?: number;
  gaveUp: boolean;
}

describe(`a fault run (seed ${SEED})`, () => {
  it(
    "runs each key at most once, completes every acked turn once and in order, and no client gives up on a done turn",
    async () => {
      const random = seededRandom(SEED);
      const started = Date.now();
      const keys: KeyRecord[] = [];
      let stopping = false;
      let finished = 0;
      const waiters: { count: number; resolve: () => void }[] = [];
      /** Every client has stopped (the run's bound passed): progress no longer comes, nothing waits for it. */
      let loadEnded = false;
      const progress = (more: number) => {
        if (loadEnded) return Promise.resolve();
        const count = finished + more;
        return new Promise<void>((resolve) => waiters.push({ count, resolve }));
      };
      const progressed = () => {
        finished += 1;
        for (const waiter of waiters.filter((w) => finished >= w.count)) {
          waiters.splice(waiters.indexOf(waiter), 1);
          waiter.resolve();
        }
      };

      const converse = async (session: string, client: ConclaveClient) => {
        for (let n = 1; !stopping; n++) {
          const record: KeyRecord = { session, key: `${session}-${n}`, gaveUp: false };
          keys.push(record);
          while (record.turnId === undefined) {
            if (Date.now() - started > RUN_BOUND_MS) {
              record.gaveUp = true;
              return;
            }
            const turn = client.submit(session, `How do I plan deadline number ${n}?`, {
              idempotencyKey: record.key,
              timeoutMs: 90_000,
            });
            const ack = await turn.ack.catch(() => null);
            if (!ack) continue; // no ack: as the hostile run's clients did, ask again with the same key
            record.turnId = ack.turn_id;
            await turn.result.catch(() => {}); // the checker judges the outcome from the log
          }
          progressed();
          await new Promise((resolve) => setTimeout(resolve, THINK_MS));
        }
      };
      const load = Promise.all(
        Array.from({ length: SESSIONS }, (_, i) => converse(`faults-${i}`, clients[i % clients.length]!)),
      ).finally(() => {
        loadEnded = true;
        for (const waiter of waiters.splice(0)) waiter.resolve();
      });

      // The nemesis: a fault, some progress under it, its end, some progress after.
      const faultable = nats.cluster.nodes.filter((_, index) => index !== CLIENTS_NODE);
      const kinds = ["kill node", "kill runner", "kill worker", ...(support.available ? ["cut node"] : [])];
      const done: string[] = [];
      let unhealthy = "";
      const slowHeals: string[] = [];
      const observer = await nats.connect("observer", CLIENTS_NODE);
      /** The faultable node leading the meta group, the event log or the WAL (in that order); else `picked`. */
      const leaderToCut = async (picked: NatsClusterNode): Promise<NatsClusterNode> => {
        const status = await readClusterStatus(observer, { monitor: nats.cluster.monitorUrl });
        const leaderOf = (stream: string) => status.stores.find((store) => store.stream === stream)?.leader;
        const leaders = [status.metaLeader, leaderOf("CONCLAVE_EVENTS_0"), leaderOf("CONCLAVE_TURNS")];
        const name = leaders.find((leader) => faultable.some((node) => node.name === leader));
        return faultable.find((node) => node.name === name) ?? picked;
      };
      await progress(SESSIONS);
      for (let i = 0; i < FAULTS; i++) {
        const began = Date.now();
        const took = () => `${Math.round((Date.now() - began) / 1_000)} s`;
        const kind = random.pick(kinds);
        if (kind === "kill runner" || kind === "kill worker") {
          const entry = random.pick(served.filter((candidate) => candidate.name.startsWith(kind.slice(5))));
          entry.process?.child.kill("SIGKILL");
          await progress(SESSIONS);
          await spawn(entry);
          done.push(`${kind} ${entry.name} (${took()})`);
        } else {
          // A cut goes to a leader (leaderToCut), as in the hostile run; a kill to either faultable node.
          // Drawn for a cut too, so the generator's later draws never depend on the cluster's leaders.
          const picked: NatsClusterNode = random.pick(faultable);
          const node = kind === "cut node" ? await leaderToCut(picked) : picked;
          const index = nats.cluster.nodes.indexOf(node);
          if (kind === "kill node") await node.kill("SIGKILL");
          else await network!.cut(index);
          // A process kill on top of the node's fault, one time in three.
          const also = random.int(0, 2) === 0 ? random.pick(served) : undefined;
          also?.process?.child.kill("SIGKILL");
          await progress(kind === "cut node" ? CUT_TURNS : SESSIONS);
          if (kind === "kill node") await node.start();
          else await network!.heal(index);
          if (also) await spawn(also);
          done.push(`${kind} ${node.name}${also ? ` with ${also.name} killed` : ""} (${took()})`);
          // A healed copy's catch-up is nats-server's: one still behind after 60 s is reported, and the
          // run goes on once every store has a current quorum again (the next fault then still leaves
          // a quorum). A cluster without one ends the faults; the checker still reads what the run did.
          const slow = await nats.healthy(observer, 60_000).then(
            () => "",
            (error: Error) => error.message,
          );
          if (slow) slowHeals.push(`after fault ${i + 1}: ${slow}`);
          unhealthy = slow
            ? await nats.quorate(observer, 30_000).then(
                () => "",
                (error: Error) => error.message,
              )
            : "";
          if (unhealthy) break;
        }
        await progress(SESSIONS);
      }
      stopping = true;
      await load;

      // Every acked turn settles before the checker reads: a client's follow may have given up on one still
      // under way (its earlier turn's redelivery held it), and a turn is lost only if it never ends. How long
      // the slowest took is printed.
      const settling = Date.now();
      const unsettled: string[] = [];
      for (const record of keys.filter((candidate) => candidate.turnId !== undefined)) {
        const left = Math.max(1_000, SETTLE_MS - (Date.now() - settling));
        await settledStatus(observer, record.session, record.turnId!, left).catch((error: Error) =>
          unsettled.push(error.message),
        );
      }
      const settledIn = Date.now() - settling;

      // The checker: every session's history, read back from the log.
      const reader = clients[0]!;
      const extra: string[] = [];
      const lost: string[] = [];
      const twice: string[] = [];
      const disorder: string[] = [];
      const gaveUpOnDone: string[] = [];
      let acked = 0;
      for (let i = 0; i < SESSIONS; i++) {
        const session = `faults-${i}`;
        const byTurn = new Map<number, { position: number; event: EngineEvent }[]>();
        for await (const item of reader.events(session)) {
          const list = byTurn.get(item.event.turn_id) ?? [];
          list.push(item);
          byTurn.set(item.event.turn_id, list);
        }
        const ackedIds = new Set(
          keys.flatMap((record) => (record.session === session && record.turnId ? [record.turnId] : [])),
        );
        acked += ackedIds.size;
        let previousEnd = 0;
        for (const turnId of [...byTurn.keys()].sort((a, b) => a - b)) {
          const events = byTurn.get(turnId)!;
          const ran = events.some(({ event }) => event.kind === "TURN_STARTED");
          if (ran && !ackedIds.has(turnId)) extra.push(`${session}/${turnId}`);
          const ends = events.filter(({ event }) => event.kind === "TURN_COMPLETED");
          // The turn's stored history goes with it: what a failed run needs to be understood.
          if (ends.length > 1)
            twice.push(`${session}/${turnId}: ${events.map(({ event }) => `${event.seq} ${event.kind}`).join(", ")}`);
          if (!events.every(({ event }, index) => event.seq === index))
            disorder.push(`${session}/${turnId} not contiguous`);
          const start = events.find(({ event }) => event.kind === "TURN_STARTED");
          if (start && start.position < previousEnd)
            disorder.push(`${session}/${turnId} started before its previous turn ended`);
          if (ends[0]) previousEnd = ends[0].position;
        }
        for (const turnId of ackedIds) {
          const events = byTurn.get(turnId) ?? [];
          if (events.some(({ event }) => event.kind === "TURN_COMPLETED")) continue;
          // A lost turn goes with its status and stored kinds: what CI's short tail needs to be understood.
          const status = await readStatus(observer, session, turnId).catch((error: Error) => error.message);
          const said =
            status === null || typeof status === "string"
              ? `status ${status ?? "none"}`
              : `${status.status}${status.reason ? ` (${status.reason})` : ""}, ${status.attempts} attempt(s), runner ${status.runner ?? "none"}`;
          lost.push(`${session}/${turnId}: ${said}; ${events.map(({ event }) => event.kind).join(" ") || "no events"}`);
        }
        for (const record of keys.filter((candidate) => candidate.session === session && candidate.gaveUp)) {
          // A key given up on: no turn of it may have completed (the client would have been lied to).
          const unacked = [...byTurn.keys()].filter((turnId) => !ackedIds.has(turnId));
          if (unacked.some((turnId) => byTurn.get(turnId)!.some(({ event }) => event.kind === "TURN_COMPLETED")))
            gaveUpOnDone.push(record.key);
        }
      }
      console.log(
        `fault run, seed ${SEED} (CONCLAVE_FAULT_SEED), ${Math.round((Date.now() - started) / 1_000)} s: ${done.join("; ")}; keys ${keys.length}, acked ${acked}, extra executions ${extra.length}, lost ${lost.length}, completed twice ${twice.length}, out of order ${disorder.length}, gave up on a done turn ${gaveUpOnDone.length}${unhealthy ? `; ${unhealthy}` : ""}`,
      );
      for (const slow of slowHeals) console.log(`fault run, seed ${SEED}: a copy was slow to catch up ${slow}`);
      console.log(
        `fault run, seed ${SEED}: every acked turn settled ${Math.round(settledIn / 1_000)} s after the load stopped${unsettled.length ? `, except: ${unsettled.join("; ")}` : ""}`,
      );
      // The first lost turns lead the failure's message: CI's summary keeps only its first line.
      const verdict = lost.length ? `lost ${lost.slice(0, 2).join(" | ")}` : "what the checker found";
      expect({ extra, lost, twice, disorder, gaveUpOnDone, unhealthy }, verdict).toEqual({
        extra: [],
        lost: [],
        twice: [],
        disorder: [],
        gaveUpOnDone: [],
        unhealthy: "",
      });
      expect(done.length).toBe(FAULTS);
      expect(acked).toBeGreaterThanOrEqual(SESSIONS * (done.length + 1));
    },
    TEST_MS,
  );
});
