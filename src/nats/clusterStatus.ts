/**
 * What `conclave status` reports: the server a connection reached, the
 * cluster's nodes as JetStream sees them, and each Conclave stream's and KV
 * bucket's replicas and health (stream info's `cluster` field: its leader, and
 * each replica's current/lag/offline). Read with stream info requests only,
 * which nats.conf grants the observer role for every Conclave stream. The
 * JetStream meta leader (the node that places streams and elects their
 * leaders) is known only to the system account and to the servers' HTTP
 * monitoring port: it is read from a node's `/jsz` when one is given.
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
   * The JetStream meta leader, as a node's monitoring endpoint (`/jsz`) names it. Absent without
   * a monitoring endpoint (`metaLeaderProblem` says why), on a single server outside any cluster,
   * or while no node leads.
   */
  metaLeader?: string;
  /** Why the meta leader is not known (a single server, no monitoring endpoint given, none answered, no leader). */
  metaLeaderProblem?: string;
  /** The node leading the event log (CONCLAVE_EVENTS), where every turn's events are written. */
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

export interface ClusterStatusOptions {
  /**
   * Monitoring endpoints of the nodes (`http://host:8222`; a list, or comma-separated), asked in
   * turn for the JetStream meta leader until one names it. Default: none (the leader is unknown).
   */
  monitor?: string | readonly string[];
  /** How long to wait for each monitoring endpoint. Default 2 s. */
  monitorTimeoutMs?: number;
}

/** Reads the status of the cluster (or single server) `nc` is connected to. */
export async function readClusterStatus(
  nc: NatsConnection,
  options: ClusterStatusOptions = {},
): Promise<ClusterStatus> {
  const jsm = await jetstreamManager(nc, { checkAPI: false });
  const [stores, meta] = await Promise.all([
    Promise.all(CONCLAVE_STORES.map(({ stream, kind }) => storeStatus(jsm, stream, kind))),
    // A single server outside any cluster has no meta group to lead.
    nc.info?.cluster
      ? readMetaLeader(options.monitor, options.monitorTimeoutMs ?? 2_000)
      : { leader: undefined, problem: "none: a single server, no cluster" },
  ]);
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
    ...(meta.leader ? { metaLeader: meta.leader } : { metaLeaderProblem: meta.problem }),
    ...(eventLog?.leader ? { eventLogLeader: eventLog.leader } : {}),
    stores,
  };
}

/** The monitoring endpoints given, as a list. */
export function monitorUrls(monitor: string | readonly string[] | undefined): string[] {
  const listed = typeof monitor === "string" ? monitor.split(",") : [...(monitor ?? [])];
  return listed.map((url) => url.trim().replace(/\/+$/, "")).filter((url) => url !== "");
}

/**
 * The meta leader from the first monitoring endpoint whose `/jsz` names it: every node's answer
 * carries `meta_cluster.leader` (empty while it knows none, e.g. cut off from the others).
 */
async function readMetaLeader(
  monitor: string | readonly string[] | undefined,
  timeoutMs: number,
): Promise<{ leader?: string; problem: string }> {
  const urls = monitorUrls(monitor);
  if (urls.length === 0) {
    return {
      problem:
        "no monitoring endpoint given (conclave status --monitor http://HOST:8222); NATS tells it only to the system account",
    };
  }
  const problems: string[] = [];
  for (const url of urls) {
    try {
      const response = await fetch(`${url}/jsz`, { signal: AbortSignal.timeout(timeoutMs) });
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      const jsz = (await response.json()) as { meta_cluster?: { leader?: string } };
      const leader = jsz.meta_cluster?.leader;
      if (leader) return { leader, problem: "" };
      problems.push(`${url}: ${jsz.meta_cluster ? "knows no leader" : "not in a cluster"}`);
    } catch (error) {
      // fetch says only "fetch failed"; the reason (ECONNREFUSED…) is its cause.
      const cause = (error as { cause?: { code?: string } }).cause?.code;
      problems.push(`${url}: ${singleLine(messageOf(error), 80)}${cause ? ` (${cause})` : ""}`);
    }
  }
  return { problem: problems.join("; ") };
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
