/**
 * The HTTP monitoring endpoints of a cluster's nodes (nats-server `-m` /
 * `http_port`), asked all at once: `/varz` names the node (`server_name`),
 * `/jsz` says whom it takes for the JetStream meta leader and, on the meta
 * leader, when it last heard from each other node. NATS tells the meta leader
 * only to the system account, which no Conclave role is; the monitoring port
 * answers anyone. An endpoint that does not answer is a node down or cut off
 * (or a wrong URL): its name is not known, only that it did not answer.
 */
import { messageOf, singleLine } from "../errors.ts";

/** A node's view of the JetStream meta group, from its `/jsz`. */
export interface MetaView {
  /** The meta leader it names; empty while it knows none (e.g. cut off from the others, or an election). */
  leader: string;
  /** The other nodes of the meta group as the leader sees them (only the leader's `/jsz` lists them). */
  peers: MetaPeer[];
}

/** Another node of the meta group, as the meta leader sees it. */
export interface MetaPeer {
  name: string;
  current: boolean;
  offline: boolean;
  /** Milliseconds since the meta leader last heard from it (`active`). */
  lastSeenMs: number | undefined;
}

/** An endpoint that answered. */
export interface MonitorAnswer {
  url: string;
  /** The node's server name (`/varz`). */
  node: string;
  /** Its view of the meta group; undefined outside any cluster, or when its `/jsz` did not answer (`problem`). */
  meta?: MetaView;
  problem?: string;
}

/** Every endpoint's answer, or why it gave none. */
export interface MonitorReading {
  answered: MonitorAnswer[];
  failed: { url: string; problem: string }[];
}

/** The monitoring endpoints given (a list, or comma-separated), as a list without trailing slashes. */
export function monitorUrls(monitor: string | readonly string[] | undefined): string[] {
  const listed = typeof monitor === "string" ? monitor.split(",") : [...(monitor ?? [])];
  return listed.map((url) => url.trim().replace(/\/+$/, "")).filter((url) => url !== "");
}

/** Asks every endpoint's `/varz` and `/jsz` in parallel, each for at most `timeoutMs`. */
export async function readMonitors(urls: readonly string[], timeoutMs: number): Promise<MonitorReading> {
  const reading: MonitorReading = { answered: [], failed: [] };
  const answers = await Promise.all(urls.map((url) => askEndpoint(url, timeoutMs)));
  for (const answer of answers) {
    if ("node" in answer) reading.answered.push(answer);
    else reading.failed.push(answer);
  }
  return reading;
}

async function askEndpoint(url: string, timeoutMs: number): Promise<MonitorAnswer | { url: string; problem: string }> {
  const [varz, jsz] = await Promise.allSettled([getJson(url, "/varz", timeoutMs), getJson(url, "/jsz", timeoutMs)]);
  if (varz.status === "rejected") return { url, problem: failure(varz.reason) };
  const node = (varz.value as { server_name?: unknown }).server_name;
  if (typeof node !== "string" || node === "") return { url, problem: "its /varz names no server" };
  if (jsz.status === "rejected") return { url, node, problem: `/jsz: ${failure(jsz.reason)}` };
  const cluster = (jsz.value as { meta_cluster?: RawMetaCluster }).meta_cluster;
  if (!cluster) return { url, node };
  const peers = (cluster.replicas ?? []).map((peer) => ({
    name: peer.name,
    current: peer.current ?? false,
    offline: peer.offline ?? false,
    lastSeenMs: typeof peer.active === "number" ? peer.active / 1e6 : undefined,
  }));
  return { url, node, meta: { leader: cluster.leader ?? "", peers } };
}

interface RawMetaCluster {
  leader?: string;
  replicas?: { name: string; current?: boolean; offline?: boolean; active?: number }[];
}

async function getJson(url: string, path: string, timeoutMs: number): Promise<unknown> {
  const response = await fetch(`${url}${path}`, { signal: AbortSignal.timeout(timeoutMs) });
  if (!response.ok) throw new Error(`HTTP ${response.status}`);
  return response.json();
}

/** One line for a failed request: fetch says only "fetch failed"; the reason (ECONNREFUSED…) is its cause. */
function failure(error: unknown): string {
  const cause = (error as { cause?: { code?: string } }).cause?.code;
  return `${singleLine(messageOf(error), 80)}${cause ? ` (${cause})` : ""}`;
}
