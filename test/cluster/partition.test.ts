/**
 * The cluster partition run: the failure run of failover.test.ts
 * (test/helpers/clusterFaults.ts), with each node in its own network
 * namespace on this machine (test/helpers/netns.ts) and a node's link cut
 * instead of its process killed: the node keeps running, cut off from the
 * other nodes and from the runners, workers and clients connected to it,
 * then its link comes back. The node leading the turn WAL is cut first, then
 * the one leading the event log; the clients' node is never cut (they stand
 * for applications that keep their own link). Same promises and printed
 * counts as the kill run. Where namespaces cannot be made (not root, no
 * `ip netns`), one line says so and the kill run is run instead.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ConclaveClient, connect } from "../../src/client/index.ts";
import type { NatsClusterNode } from "../../src/nats/cluster.ts";
import {
  CLUSTER_RUN_TEST_MS,
  expectCleanRun,
  killNode,
  type NodeFault,
  runClusterFaults,
  spawnSpreadProcesses,
} from "../helpers/clusterFaults.ts";
import { useNatsCluster } from "../helpers/natsCluster.ts";
import { type NetnsCluster, netnsSupport, startNetnsCluster } from "../helpers/netns.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";

const support = await netnsSupport();
if (!support.available) {
  console.log(`network namespaces are unavailable (${support.reason}): running the kill variant instead of partitions`);
}
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
/** The URL the next process spawned is given: its node. */
let nodeUrl = "";
const processes = useConclaveProcesses(
  () => nodeUrl,
  () => ({ CONCLAVE_REPLICAS: "3" }),
);
const clients: ConclaveClient[] = [];
/** The node the clients are connected to, never cut (with namespaces). */
const CLIENTS_NODE = 2;

const indexOf = (node: NatsClusterNode) => nats.cluster.nodes.indexOf(node);
const cutLink: NodeFault = {
  verb: "cut off",
  begin: (node) => network!.cut(indexOf(node)),
  end: (node) => network!.heal(indexOf(node)),
};

beforeAll(async () => {
  await spawnSpreadProcesses(nats, processes, (url) => {
    nodeUrl = url;
  });
  const servers = support.available ? nats.node(CLIENTS_NODE).url : nats.url;
  for (let i = 0; i < 2; i++) clients.push(await connect({ servers }));
}, 90_000);
afterAll(async () => {
  await Promise.allSettled(clients.map((client) => client.close()));
});

describe("a three-node cluster with a node cut off, then another", () => {
  it(
    "completes every turn exactly once, with at most one takeover each",
    async () => {
      const result = await runClusterFaults(
        support.available
          ? { nats, clients, fault: cutLink, label: "partition", spare: [nats.node(CLIENTS_NODE).name], healMs: 90_000 }
          : { nats, clients, fault: killNode, label: "failover" },
      );
      expectCleanRun(result);
      // Every node ran throughout (or, killed, was started again), and the cluster serves.
      for (const node of nats.cluster.nodes) expect(node.process, node.name).not.toBeNull();
      const after = await clients[0]!.submit("partition-after", "hello again").result;
      expect(after.response.length).toBeGreaterThan(0);
    },
    CLUSTER_RUN_TEST_MS,
  );
});
