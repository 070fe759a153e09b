/**
 * Spreads the event log's stream leaders over a cluster's nodes. JetStream
 * elects each stream's leader among its replicas on its own, so S streams on
 * N nodes may all be led by one node, which then takes every write of the log;
 * a node that restarts leads nothing until elections move some back. A runner
 * that starts asks the leaders of the busiest node's surplus streams to step
 * down (`$JS.API.STREAM.LEADER.STEPDOWN`), until no node leads more than
 * ⌈S / N⌉ or a few tries passed: a new leader is elected among the other
 * replicas, at random, so it may take more than one.
 */
import type { JetStreamManager, StreamInfo } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import { eventStream } from "../bus/subjects.ts";
import { pause } from "../deadline.ts";

/** Step-downs one balancing tries, per stream of the log, before it leaves the leaders as they are. */
const MAX_STEP_DOWNS_PER_STREAM = 3;
/** How long a stream may go without a leader after a step-down before balancing gives up on it. */
const ELECTION_WAIT_MS = 5_000;

/** Who leads which of the log's streams, and which nodes hold a copy. */
export interface LeaderSpread {
  /** Node name → the streams it leads. */
  leads: Map<string, string[]>;
  /** Every node holding a copy of some stream. */
  nodes: Set<string>;
}

/** Reads the leader and replicas of each of the log's streams (one stream info each). */
export async function leaderSpread(jsm: JetStreamManager, count: number): Promise<LeaderSpread> {
  const infos = await Promise.all(Array.from({ length: count }, (_, i) => jsm.streams.info(eventStream(i))));
  return spreadOf(infos);
}

function spreadOf(infos: StreamInfo[]): LeaderSpread {
  const leads = new Map<string, string[]>();
  const nodes = new Set<string>();
  for (const info of infos) {
    const leader = info.cluster?.leader;
    if (leader) {
      nodes.add(leader);
      leads.set(leader, [...(leads.get(leader) ?? []), info.config.name]);
    }
    for (const replica of info.cluster?.replicas ?? []) nodes.add(replica.name);
  }
  for (const node of nodes) if (!leads.has(node)) leads.set(node, []);
  return { leads, nodes };
}

/** A stream the busiest node leads beyond its fair share (⌈S / N⌉) while another leads two fewer; else null. */
export function surplusStream(spread: LeaderSpread, count: number): string | null {
  if (spread.nodes.size < 2) return null;
  const fair = Math.ceil(count / spread.nodes.size);
  const ranked = [...spread.leads.entries()].sort((a, b) => b[1].length - a[1].length);
  const [busiest, least] = [ranked[0], ranked.at(-1)];
  if (!busiest || !least || busiest[1].length <= fair || busiest[1].length - least[1].length < 2) return null;
  return busiest[1].at(-1) ?? null;
}

/**
 * Moves leaders off the busiest node until the spread is fair (see the module's comment). Returns
 * how many step-downs it asked for. On a single server, or with one stream, it does nothing.
 */
export async function balanceEventLeaders(nc: NatsConnection, jsm: JetStreamManager, count: number): Promise<number> {
  let asked = 0;
  while (asked < MAX_STEP_DOWNS_PER_STREAM * count) {
    const stream = surplusStream(await leaderSpread(jsm, count), count);
    if (stream === null) return asked;
    const before = (await jsm.streams.info(stream)).cluster?.leader;
    // nats.js has no call for it: the JetStream API request itself (its reply says whether it was done).
    await nc.request(`$JS.API.STREAM.LEADER.STEPDOWN.${stream}`, undefined, { timeout: ELECTION_WAIT_MS });
    asked++;
    await newLeader(jsm, stream, before);
  }
  return asked;
}

async function newLeader(jsm: JetStreamManager, stream: string, before: string | undefined): Promise<void> {
  const deadline = Date.now() + ELECTION_WAIT_MS;
  while (Date.now() < deadline) {
    const leader = (await jsm.streams.info(stream).catch(() => null))?.cluster?.leader;
    if (leader && leader !== before) return;
    await pause(100);
  }
}
