import type { NatsConnection } from "@nats-io/nats-core";
import { afterAll, beforeAll } from "vitest";
import { busOptions, connectBus, type Role } from "../../src/bus/connection.ts";
import { eventStreamCount } from "../../src/eventlog/eventStreams.ts";
import { type NatsClusterNode, type RunningNatsCluster, startNatsCluster } from "../../src/nats/cluster.ts";
import { type ClusterStatus, readClusterStatus } from "../../src/nats/clusterStatus.ts";

/**
 * Starts a real three-node NATS cluster (the repo's nats.conf, loopback, free
 * ports, a temporary store per node) for the current test file, and stops it
 * after. Nodes may be killed and started again (`node(i).kill()`, `.start()`).
 * `start` starts another kind of cluster instead (its `stop` undoes all of it),
 * e.g. one node per network namespace (test/helpers/netns.ts).
 */
export function useNatsCluster(
  nodes = 3,
  start: () => Promise<RunningNatsCluster> = () => startNatsCluster({ nodes }),
) {
  let cluster: RunningNatsCluster | undefined;
  const connections: NatsConnection[] = [];
  beforeAll(async () => {
    cluster = await start();
  }, 60_000);
  afterAll(async () => {
    await Promise.allSettled(connections.map((nc) => nc.close()));
    await cluster?.stop();
  });
  const running = (): RunningNatsCluster => {
    if (!cluster) throw new Error("the NATS cluster is not started yet");
    return cluster;
  };
  return {
    /** Every node's URL, comma-separated. */
    get url(): string {
      return running().url;
    },
    get cluster(): RunningNatsCluster {
      return running();
    },
    node(index: number): NatsClusterNode {
      const node = running().nodes[index];
      if (!node) throw new Error(`no node ${index}`);
      return node;
    },
    /**
     * A connection as one of nats.conf's roles, closed after the file's tests: to one node (it
     * learns the others from the server), or to any of them; it reconnects for ever.
     */
    async connect(role: Role, node?: number): Promise<NatsConnection> {
      const servers = node === undefined ? running().url : this.node(node).url;
      const nc = await connectBus(busOptions(role, { servers, persistent: false, reconnectAttempts: -1 }));
      connections.push(nc);
      return nc;
    },
    /**
     * Resolves with the cluster's status once every Conclave stream and bucket that exists has a
     * leader and all its copies current (a bounded poll: JetStream has no event for it).
     */
    async healthy(observer: NatsConnection, timeoutMs = 30_000): Promise<ClusterStatus> {
      return waitForStores(observer, timeoutMs, "healthy", (store) => store.health === "healthy");
    },
    /**
     * Resolves once every Conclave stream and bucket that exists has a leader and a quorum of
     * current copies (writes go on), though a copy may still be catching up: what a run needs to
     * go on, when a healed copy's catch-up is slow (nats-server's business, not Conclave's).
     */
    async quorate(observer: NatsConnection, timeoutMs = 30_000): Promise<ClusterStatus> {
      return waitForStores(observer, timeoutMs, "quorate", (store) => {
        if (!store.leader) return false;
        const current = store.copies.filter((copy) => copy.leader || (copy.current && !copy.offline)).length;
        return current * 2 > store.replicas;
      });
    },
  };
}

/** Polls the cluster's status until every store that exists passes `well` (JetStream has no event for it). */
async function waitForStores(
  observer: NatsConnection,
  timeoutMs: number,
  state: string,
  well: (store: ClusterStatus["stores"][number]) => boolean,
): Promise<ClusterStatus> {
  const deadline = Date.now() + timeoutMs;
  let last: ClusterStatus | null = null;
  let problem = "";
  while (Date.now() < deadline) {
    try {
      last = await readClusterStatus(observer, { eventStreams: await eventStreamCount(observer) });
      const unwell = last.stores.filter((store) => store.health !== "absent" && !well(store));
      if (unwell.length === 0) return last;
      // Each unwell store's copies, so a failure says which copy on which node is behind or silent.
      problem = unwell
        .map((store) => {
          const copies = store.copies
            .filter((copy) => !copy.leader)
            .map(
              (copy) =>
                `${copy.node}${copy.current ? "" : " not current"}${copy.offline ? " offline" : ""}${copy.lag ? ` lag ${copy.lag}` : ""}${copy.lastSeenMs === undefined ? "" : ` seen ${Math.round(copy.lastSeenMs)} ms ago`}`,
            );
          return `${store.stream} ${store.health} (leader ${store.leader ?? "none"}, ${store.copies.length}/${store.replicas} copies${copies.length ? `: ${copies.join(", ")}` : ""})`;
        })
        .join(", ");
    } catch (error) {
      problem = String(error);
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`the cluster is not ${state} after ${timeoutMs} ms: ${problem}`);
}
