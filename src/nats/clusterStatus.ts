/**
 * What `conclave status` reports: the server a connection reached, the
 * cluster's nodes as JetStream sees them, and each Conclave stream's and KV
 * bucket's replicas and health (stream info's `cluster` field: its leader, and
 * each replica's current/lag/offline). Read with stream info requests only,
 * which nats.conf grants the observer role for every Conclave stream.
 */
import { type JetStreamManager, jetstreamManager, type StreamInfo } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import { BLACKBOARD_BUCKET } from "../blackboard/natsStore.ts";
import { buckets, streams } from "../bus/subjects.ts";
import { messageOf, singleLine } from "../errors.ts";
import { isStreamNotFound } from "../eventlog/streams.ts";
import { replicasOf } from "./replicas.ts";

/** One copy of a stream, on one node. */
export interface ReplicaStatus {
  /** The node's server name. */
  node: string;
  leader: boolean;
  /** Caught up with the leader (the leader always is). */
  current: boolean;
  offline: boolean;
  /** Operations behind the leader. */
  lag: number;
}

/**
 * `healthy`: a leader and every replica current; `degraded`: a leader, but a replica offline or
 * behind (writes go on while a quorum is up); `no_leader`: writes wait for an election; `absent`:
 * not created yet (nothing ran that needs it); `unreadable`: its info was refused or timed out.
 */
export type StoreHealth = "healthy" | "degraded" | "no_leader" | "absent" | "unreadable";

/** A Conclave stream or KV bucket. */
export interface StoreStatus {
  /** The stream's name (a bucket `b` is the stream `KV_b`). */
  stream: string;
  kind: "stream" | "KV bucket";
  /** Replicas configured on the stream (0 when absent or unreadable). */
  replicas: number;
  health: StoreHealth;
  /** The node leading it; undefined on a single server that runs no cluster, or without a leader. */
  leader?: string;
  copies: ReplicaStatus[];
  messages: number;
  /** Why it is unreadable. */
  problem?: string;
}

/** A node of the cluster, as the streams' replicas name it. */
export interface NodeStatus {
  name: string;
  /** False when some stream reports its replica there offline. */
  online: boolean;
  /** How many of the streams it leads. */
  leads: number;
  /** The node this connection is on. */
  connected: boolean;
}

export interface ClusterStatus {
  /** The server this connection reached. */
  server: { name: string; url: string; version: string; cluster?: string };
  /** Other servers' client URLs the server advertised (the cluster's other nodes). */
  peers: string[];
  nodes: NodeStatus[];
  /**
   * The node leading the event log (CONCLAVE_EVENTS), where every turn's events are written: the
   * JetStream leader that matters to Conclave. The meta leader is known only to the system account
   * (`nats server report jetstream`).
   */
  eventLogLeader?: string;
  stores: StoreStatus[];
}

/** Every stream and KV bucket Conclave creates, by stream name. */
export const CONCLAVE_STORES: readonly { stream: string; kind: "stream" | "KV bucket" }[] = [
  ...Object.values(streams).map((stream) => ({ stream, kind: "stream" as const })),
  ...[...Object.values(buckets), BLACKBOARD_BUCKET].map((bucket) => ({
    stream: `KV_${bucket}`,
    kind: "KV bucket" as const,
  })),
];

/** Reads the status of the cluster (or single server) `nc` is connected to. */
export async function readClusterStatus(nc: NatsConnection): Promise<ClusterStatus> {
  const jsm = await jetstreamManager(nc, { checkAPI: false });
  const stores = await Promise.all(CONCLAVE_STORES.map(({ stream, kind }) => storeStatus(jsm, stream, kind)));
  const info = nc.info;
  const serverName = info?.server_name ?? "unknown";
  const nodes = new Map<string, NodeStatus>();
  const node = (name: string) => {
    let found = nodes.get(name);
    if (!found) {
      found = { name, online: true, leads: 0, connected: name === serverName };
      nodes.set(name, found);
    }
    return found;
  };
  node(serverName);
  for (const store of stores) {
    for (const copy of store.copies) {
      const known = node(copy.node);
      if (copy.offline) known.online = false;
      if (copy.leader) known.leads += 1;
    }
  }
  const eventLog = stores.find((store) => store.stream === streams.events);
  return {
    server: {
      name: serverName,
      url: nc.getServer(),
      version: info?.version ?? "unknown",
      ...(info?.cluster ? { cluster: info.cluster } : {}),
    },
    peers: info?.connect_urls ?? [],
    nodes: [...nodes.values()].sort((a, b) => a.name.localeCompare(b.name)),
    ...(eventLog?.leader ? { eventLogLeader: eventLog.leader } : {}),
    stores,
  };
}

async function storeStatus(jsm: JetStreamManager, stream: string, kind: "stream" | "KV bucket"): Promise<StoreStatus> {
  let info: StreamInfo;
  try {
    info = await jsm.streams.info(stream);
  } catch (error) {
    if (isStreamNotFound(error)) return { stream, kind, replicas: 0, health: "absent", copies: [], messages: 0 };
    return {
      stream,
      kind,
      replicas: 0,
      health: "unreadable",
      copies: [],
      messages: 0,
      problem: singleLine(messageOf(error), 160),
    };
  }
  return { stream, kind, replicas: replicasOf(info), ...healthOf(info), messages: info.state.messages };
}

/** A stream's leader, copies and health from its info's `cluster` field. */
function healthOf(info: StreamInfo): Pick<StoreStatus, "health" | "leader" | "copies"> {
  const cluster = info.cluster;
  // A server outside any cluster: its one copy is the stream.
  if (!cluster?.name && !cluster?.leader) return { health: "healthy", copies: [] };
  const copies: ReplicaStatus[] = [];
  if (cluster.leader) copies.push({ node: cluster.leader, leader: true, current: true, offline: false, lag: 0 });
  for (const replica of cluster.replicas ?? []) {
    copies.push({
      node: replica.name,
      leader: false,
      current: replica.current,
      offline: replica.offline ?? false,
      lag: replica.lag ?? 0,
    });
  }
  const health: StoreHealth = !cluster.leader
    ? "no_leader"
    : copies.length < replicasOf(info) || copies.some((copy) => copy.offline || !copy.current)
      ? "degraded"
      : "healthy";
  return { health, ...(cluster.leader ? { leader: cluster.leader } : {}), copies };
}
