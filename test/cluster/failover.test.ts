/**
 * The cluster failure run: a three-node NATS cluster with every stream and
 * bucket R3; three runners and three workers, spread over the nodes (each given
 * one node's URL); a steady, light load of turns over a few sessions. The node
 * leading the turn WAL is killed (SIGKILL) and later restarted, then the node
 * leading the event log (test/helpers/clusterFaults.ts, shared with the
 * partition run). Promised: zero turns lost or run twice, every session's log
 * contiguous with one terminal event per turn, and the turns in flight at a
 * kill complete after at most one takeover. The counts are printed.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ConclaveClient, connect } from "../../src/client/index.ts";
import {
  CLUSTER_RUN_TEST_MS,
  expectCleanRun,
  killNode,
  runClusterFaults,
  spawnSpreadProcesses,
} from "../helpers/clusterFaults.ts";
import { useNatsCluster } from "../helpers/natsCluster.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";

const nats = useNatsCluster(3);
/** The URL the next process spawned is given: its node. */
let nodeUrl = "";
const processes = useConclaveProcesses(
  () => nodeUrl,
  () => ({ CONCLAVE_REPLICAS: "3" }),
);
const clients: ConclaveClient[] = [];

beforeAll(async () => {
  await spawnSpreadProcesses(nats, processes, (url) => {
    nodeUrl = url;
  });
  // Clients as a user's application makes them, given every node.
  for (let i = 0; i < 2; i++) clients.push(await connect({ servers: nats.url }));
}, 90_000);
afterAll(async () => {
  await Promise.allSettled(clients.map((client) => client.close()));
});

describe("a three-node cluster losing a node, then another", () => {
  it(
    "completes every turn exactly once, with at most one takeover each",
    async () => {
      expectCleanRun(await runClusterFaults({ nats, clients, fault: killNode, label: "failover" }));
      // The processes rode it out, and the cluster is whole again.
      for (const node of nats.cluster.nodes) expect(node.process, node.name).not.toBeNull();
      const after = await clients[0]!.submit("failover-after", "hello again").result;
      expect(after.response.length).toBeGreaterThan(0);
    },
    CLUSTER_RUN_TEST_MS,
  );
});
