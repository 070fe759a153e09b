import type { NatsConnection, Subscription } from "@nats-io/nats-core";
import { z } from "zod";
import { encodeJson } from "../bus/codec.ts";
import { subjects } from "../bus/subjects.ts";
import { FORMAT_HEADERS, publishJson } from "../bus/wire.ts";
import { AgentManifest } from "../contracts/agent.ts";
import { ToolManifest } from "../contracts/tool.ts";

/** Every this often a worker announces its agents again; a directory forgets a worker silent for three periods. */
export const DEFAULT_HEARTBEAT_MS = 5_000;

/**
 * Shortest heartbeat an announcement may give: a worker announcing more often
 * would only load every directory (each announcement is parsed by all of them).
 */
export const MIN_HEARTBEAT_MS = 100;

/**
 * Longest heartbeat an announcement may give. A directory forgets a worker
 * three heartbeats after its last announcement, so this bounds how long an
 * agent whose worker died (or that was announced once and never again) is
 * still planned: at most three minutes, not forever.
 */
export const MAX_HEARTBEAT_MS = 60_000;

/** What a worker publishes on `conclave.agents.announce`: the agents and tools it hosts, by manifest. */
export const AgentAnnouncement = z.object({
  /** The worker process (`<host>:<pid>`), unique among live workers. */
  worker: z.string().min(1).max(200),
  agents: z.array(AgentManifest).max(500),
  /** The tools it hosts (absent from workers that host none, and from older workers). */
  tools: z.array(ToolManifest).max(500).default([]),
  /** How often this worker announces itself again, from MIN_HEARTBEAT_MS to MAX_HEARTBEAT_MS. */
  heartbeat_ms: z.number().int().min(MIN_HEARTBEAT_MS).max(MAX_HEARTBEAT_MS),
});
export type AgentAnnouncement = z.infer<typeof AgentAnnouncement>;

/**
 * A runner's answer on `conclave.agents.roster`: the live agents and tools its
 * directory holds, which are what its turns are planned and checked with
 * (announced agents a roll call would not show, because their worker stopped
 * answering, included until they expire).
 */
export const AgentRoster = z.object({
  /** The runner that answered (`<host>:<pid>`). */
  runner: z.string().min(1).max(200),
  agents: z.array(AgentManifest).max(10_000),
  tools: z.array(ToolManifest).max(10_000),
});
export type AgentRoster = z.infer<typeof AgentRoster>;

/** What a stopping worker publishes on `conclave.agents.withdraw`. */
export const AgentWithdrawal = z.object({ worker: z.string().min(1).max(200) });
export type AgentWithdrawal = z.infer<typeof AgentWithdrawal>;

/** A worker's side of discovery; `stop` withdraws its agents. */
export interface Announcer {
  stop(): Promise<void>;
}

/**
 * Announces a worker's agents (and tools): once now (flushed, so a turn submitted after
 * the worker is ready finds them), on every roll call, and every heartbeat. A heartbeat
 * outside MIN_HEARTBEAT_MS..MAX_HEARTBEAT_MS is a RangeError: directories would refuse it.
 */
export async function announceAgents(
  nc: NatsConnection,
  worker: string,
  agents: AgentManifest[],
  heartbeatMs = DEFAULT_HEARTBEAT_MS,
  tools: ToolManifest[] = [],
): Promise<Announcer> {
  if (!Number.isInteger(heartbeatMs) || heartbeatMs < MIN_HEARTBEAT_MS || heartbeatMs > MAX_HEARTBEAT_MS)
    throw new RangeError(
      `heartbeat ${heartbeatMs} ms: an announced heartbeat is a whole number of ms from ${MIN_HEARTBEAT_MS} to ${MAX_HEARTBEAT_MS}`,
    );
  const announcement = encodeJson({
    worker,
    agents,
    ...(tools.length > 0 ? { tools } : {}),
    heartbeat_ms: heartbeatMs,
  } satisfies z.input<typeof AgentAnnouncement>);
  const announce = () => {
    if (!nc.isClosed()) nc.publish(subjects.agentsAnnounce, announcement, { headers: FORMAT_HEADERS });
  };
  const rollcall: Subscription = nc.subscribe(subjects.agentsRollcall, { callback: announce });
  announce();
  await nc.flush();
  const timer = setInterval(announce, heartbeatMs);
  timer.unref();
  return {
    stop: async () => {
      clearInterval(timer);
      rollcall.unsubscribe();
      if (nc.isClosed()) return;
      publishJson(nc, subjects.agentsWithdraw, { worker } satisfies AgentWithdrawal);
      await nc.flush().catch(() => {});
    },
  };
}
