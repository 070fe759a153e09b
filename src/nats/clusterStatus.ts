/**
 * What `conclave status` reports: the server a connection reached, the
 * cluster's nodes and whether each is up, the JetStream meta leader, and each
 * Conclave stream's and KV bucket's replicas and health (stream info's
 * `cluster` field: its leader, and each replica's current/lag/offline/active).
 * Stream info requests only, which nats.conf grants the observer role for every
 * Conclave stream, plus, when given, every node's HTTP monitoring endpoint
 * (src/nats/monitor.ts): the only place a Conclave role can learn the meta
 * leader, and the quickest sign of a node that is down.
 *
 * A node is offline when its monitoring endpoint does not answer, when the
 * meta leader or a stream's leader has not heard from it for more than
 * {@link SILENT_AFTER_MS}, or when a stream reports its copy offline; its
 * copies then count as offline (their stores degraded). Measured
 * on nats-server 2.9.10: a killed node's copies keep `offline: false` for good
 * and `current: true` for about 10 s, while `active` (time since the leader
 * last heard from it) grows from the kill; a live copy's stays under about 1 s,
 * the Raft heartbeat. And the surviving nodes' `/jsz` name a dead meta leader
 * until they elect another, seconds later: a meta leader is reported only when
 * it is not itself judged offline.
 */
import { type JetStreamManager, jetstreamManager, type StreamInfo } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import { isStreamNotFound } from "../bus/errors.ts";
import { BLACKBOARD_BUCKET, buckets, eventStream, streams } from "../bus/subjects.ts";
import { DEFAULT_EVENT_STREAMS } from "../contracts/partitions.ts";
import { messageOf, singleLine } from "../errors.ts";
import { type MonitorReading, monitorUrls, readMonitors } from "./monitor.ts";
import { replicasOf } from "./replicas.ts";

export { monitorUrls } from "./monitor.ts";

/**
 * How long a leader may go without hearing from a copy (or the meta leader from a node) before it
 * counts as offline: five Raft heartbeats (one a second), well past a busy machine's jitter and
 * well before JetStream itself stops calling the copy current (about 10 s).
 */
export const SILENT_AFTER_MS = 5_000;

/** One copy of a stream, on one node. */
export interface ReplicaStatus {
  /** The node's server name. */
  node: string;
  leader: boolean;
  /** Caught up with the leader (the leader always is). */
  current: boolean;
  /**
   * JetStream says it is offline, the leader has not heard from it for more than
   * {@link SILENT_AFTER_MS}, or its node is found offline otherwise (e.g. unreachable).
   */
  offline: boolean;
  /** Operations behind the leader. */
  lag: number;
  /** Milliseconds since the leader last heard from it (stream info's `active`); undefined for the leader. */
  lastSeenMs?: number;
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

/** A node of the cluster, as the streams' replicas and the monitoring endpoints name it. */
export interface NodeStatus {
  name: string;
  /**
   * False when it is judged down or cut off: its monitoring endpoint does not answer, the meta
   * leader or a stream's leader has not heard from it for more than {@link SILENT_AFTER_MS}, or a
   * stream reports its copy offline (`offlineBecause` says which).
   */
  online: boolean;
  /** Why it is offline (the first sign found). */
  offlineBecause?: string;
  /**
   * Whether its monitoring endpoint answered. Undefined when it cannot be told: no endpoint was
   * given, or more nodes went unnamed than endpoints failed.
   */
  reachable?: boolean;
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
   * The JetStream meta leader: the node most answering monitoring endpoints (`/jsz`) name, when
   * more than half of them do and it is not itself offline. Absent without a monitoring endpoint
   * (`metaLeaderProblem` says why), on a single server outside any cluster, or while no live node
   * leads.
   */
  metaLeader?: string;
  /** Why the meta leader is not known (a single server, no monitoring endpoint given, none answered, no leader, the one named is down). */
  metaLeaderProblem?: string;
  /** The node the answering nodes still name as meta leader while it is offline or unreachable (`metaLeader` is then absent). */
  lastNamedMetaLeader?: string;
  /**
   * Each event-log stream (`CONCLAVE_EVENTS_<i>`) and the node leading it, where the events of its
   * sessions are written: spread over the nodes, the log's writes are too. `leader` is absent while
   * a stream has none, or is not made yet.
   */
  eventLog: { stream: string; leader?: string }[];
  stores: StoreStatus[];
}

/** Every stream and KV bucket Conclave creates, by stream name, with the event log's `eventStreams`. */
export const conclaveStores = (eventStreams: readonly string[]): { stream: string; kind: "stream" | "KV bucket" }[] => [
  ...[...eventStreams, ...Object.values(streams)].map((stream) => ({
    stream,
    kind: "stream" as const,
  })),
  ...[...Object.values(buckets), BLACKBOARD_BUCKET].map((bucket) => ({
    stream: `KV_${bucket}`,
    kind: "KV bucket" as const,
  })),
];

export interface ClusterStatusOptions {
  /**
   * Monitoring endpoints of the nodes (`http://host:8222`; a list, or comma-separated), all asked
   * at once: give every node's, so a node that is down shows as unreachable and a dead meta leader
   * is never reported. Default: none (the meta leader is unknown).
   */
  monitor?: string | readonly string[];
  /** How long to wait for each monitoring endpoint. Default 2 s. */
  monitorTimeoutMs?: number;
  /** The event log's stream count (`eventStreamCount`): its streams are reported with the rest. Default `DEFAULT_EVENT_STREAMS`. */
  eventStreams?: number;
}

/** Reads the status of the cluster (or single server) `nc` is connected to. */
export async function readClusterStatus(
  nc: NatsConnection,
  options: ClusterStatusOptions = {},
): Promise<ClusterStatus> {
  const jsm = await jetstreamManager(nc, { checkAPI: false });
  const info = nc.info;
  const urls = monitorUrls(options.monitor);
  const eventStreams = Array.from({ length: options.eventStreams ?? DEFAULT_EVENT_STREAMS }, (_, index) =>
    eventStream(index),
  );
  const [stores, monitors] = await Promise.all([
    Promise.all(conclaveStores(eventStreams).map(({ stream, kind }) => storeStatus(jsm, stream, kind))),
    // A single server outside any cluster has no meta group to lead.
    info?.cluster && urls.length > 0 ? readMonitors(urls, options.monitorTimeoutMs ?? 2_000) : null,
  ]);
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
  const offline = (name: string, because: string) => {
    const found = node(name);
    if (!found.online) return;
    found.online = false;
    found.offlineBecause = because;
  };
  node(serverName);
  for (const store of stores) {
    for (const copy of store.copies) {
      if (copy.leader) node(copy.node).leads += 1;
      else node(copy.node);
    }
  }
  const meta = info?.cluster
    ? monitors
      ? judgeMonitors(monitors, nodes, node, offline)
      : {
          problem:
            "no monitoring endpoint given (conclave status --monitor http://HOST:8222); NATS tells it only to the system account",
        }
    : { problem: "none: a single server, no cluster" };
  for (const store of stores) {
    for (const copy of store.copies.filter((candidate) => candidate.offline)) {
      offline(
        copy.node,
        silent(copy.lastSeenMs)
          ? `${store.stream}'s leader has not heard from it for ${duration(copy.lastSeenMs!)}`
          : `${store.stream} reports its copy offline`,
      );
    }
  }
  // A copy on a node found down (e.g. unreachable before its leader notices) is no healthy copy.
  for (const store of stores) {
    for (const copy of store.copies) {
      if (copy.leader || copy.offline || nodes.get(copy.node)?.online !== false) continue;
      copy.offline = true;
      if (store.health === "healthy") store.health = "degraded";
    }
  }
  const leader = meta.named === undefined ? undefined : nodes.get(meta.named);
  const eventLog = eventStreams.map((stream) => {
    const leader = stores.find((store) => store.stream === stream)?.leader;
    return leader ? { stream, leader } : { stream };
  });
  return {
    server: {
      name: serverName,
      url: nc.getServer(),
      version: info?.version ?? "unknown",
      ...(info?.cluster ? { cluster: info.cluster } : {}),
    },
    peers: info?.connect_urls ?? [],
    nodes: [...nodes.values()].sort((a, b) => a.name.localeCompare(b.name)),
    ...(leader?.online
      ? { metaLeader: leader.name }
      : leader
        ? {
            metaLeaderProblem: `no meta leader reachable (last named ${leader.name}, ${leader.reachable === false ? "unreachable" : "offline"})`,
            lastNamedMetaLeader: leader.name,
          }
        : { metaLeaderProblem: meta.problem }),
    eventLog,
    stores,
  };
}

/**
 * What the monitoring endpoints tell: which nodes answered, which are unreachable (a node no
 * answering endpoint speaks for, when no more such nodes are known than endpoints failed: an
 * endpoint's name is known only from its answer), which the meta leader has not heard from, and
 * the meta leader named by more than half of the nodes that answered (whether it is up is decided
 * once every sign is in).
 */
function judgeMonitors(
  reading: MonitorReading,
  nodes: ReadonlyMap<string, NodeStatus>,
  node: (name: string) => NodeStatus,
  offline: (name: string, because: string) => void,
): { named?: string; problem: string } {
  for (const answer of reading.answered) {
    node(answer.node).reachable = true;
    if (answer.meta?.leader) node(answer.meta.leader);
    for (const peer of answer.meta?.peers ?? []) node(peer.name);
  }
  const { failed } = reading;
  if (failed.length > 0) {
    const answeredNames = new Set(reading.answered.map((answer) => answer.node));
    const unnamed = [...nodes.values()].filter((known) => !answeredNames.has(known.name) && !known.connected);
    if (unnamed.length <= failed.length) {
      const because = `unreachable (no answer from ${failed.map((f) => `${f.url}: ${f.problem}`).join("; ")})`;
      for (const known of unnamed) {
        known.reachable = false;
        offline(known.name, because);
      }
    }
  }
  const voters = reading.answered.filter((answer) => answer.meta !== undefined);
  const votes = new Map<string, number>();
  for (const { meta } of voters) if (meta!.leader) votes.set(meta!.leader, (votes.get(meta!.leader) ?? 0) + 1);
  const [named, count] = [...votes].sort((a, b) => b[1] - a[1])[0] ?? [undefined, 0];
  const views = voters.map((answer) => `${answer.node} names ${answer.meta!.leader || "none"}`).join(", ");
  if (named === undefined) {
    const problems = [
      ...reading.answered.map(
        (answer) => `${answer.url}: ${answer.problem ?? (answer.meta ? "knows no leader" : "not in a cluster")}`,
      ),
      ...failed.map((f) => `${f.url}: ${f.problem}`),
    ];
    return { problem: problems.join("; ") };
  }
  if (count * 2 <= voters.length)
    return { problem: `no leader named by more than half of the answering nodes (${views})` };
  // The meta leader's own view: when it last heard from each other node.
  const own = reading.answered.find((answer) => answer.node === named);
  for (const peer of own?.meta?.peers ?? []) {
    if (silent(peer.lastSeenMs))
      offline(peer.name, `the meta leader has not heard from it for ${duration(peer.lastSeenMs!)}`);
    else if (peer.offline) offline(peer.name, "the meta leader reports it offline");
  }
  return { named, problem: "" };
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
    const lastSeenMs = typeof replica.active === "number" ? replica.active / 1e6 : undefined;
    copies.push({
      node: replica.name,
      leader: false,
      current: replica.current,
      offline: (replica.offline ?? false) || silent(lastSeenMs),
      lag: replica.lag ?? 0,
      ...(lastSeenMs !== undefined ? { lastSeenMs } : {}),
    });
  }
  const health: StoreHealth = !cluster.leader
    ? "no_leader"
    : copies.length < replicasOf(info) || copies.some((copy) => copy.offline || !copy.current)
      ? "degraded"
      : "healthy";
  return { health, ...(cluster.leader ? { leader: cluster.leader } : {}), copies };
}

/** Whether a leader has gone more than {@link SILENT_AFTER_MS} without hearing from a copy or node. */
const silent = (lastSeenMs: number | undefined): boolean => lastSeenMs !== undefined && lastSeenMs > SILENT_AFTER_MS;

/** `7.2 s`, `over an hour`. */
const duration = (ms: number): string => (ms > 3_600_000 ? "over an hour" : `${(ms / 1000).toFixed(1)} s`);
