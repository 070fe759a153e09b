import type { NatsConnection, Subscription } from "@nats-io/nats-core";
import { z } from "zod";
import { encodeJson } from "../bus/codec.ts";
import { subjects } from "../bus/subjects.ts";
import { AgentManifest } from "../contracts/agent.ts";
import { ToolManifest } from "../contracts/tool.ts";

/** Every this often a worker announces its agents again; a directory forgets a worker silent for three periods. */
export const DEFAULT_HEARTBEAT_MS = 5_000;

/** What a worker publishes on `conclave.agents.announce`: the agents and tools it hosts, by manifest. */
export const AgentAnnouncement = z.object({
  /** The worker process (`<host>:<pid>`), unique among live workers. */
  worker: z.string().min(1).max(200),
  agents: z.array(AgentManifest).max(500),
  /** The tools it hosts (absent from workers that host none, and from older workers). */
  tools: z.array(ToolManifest).max(500).default([]),
  /** How often this worker announces itself again. */
  heartbeat_ms: z.number().int().positive(),
});
export type AgentAnnouncement = z.infer<typeof AgentAnnouncement>;

/** What a stopping worker publishes on `conclave.agents.withdraw`. */
export const AgentWithdrawal = z.object({ worker: z.string().min(1).max(200) });
export type AgentWithdrawal = z.infer<typeof AgentWithdrawal>;

/** A worker's side of discovery; `stop` withdraws its agents. */
export interface Announcer {
  stop(): Promise<void>;
}

/**
 * Announces a worker's agents (and tools): once now (flushed, so a turn submitted after
 * the worker is ready finds them), on every roll call, and every heartbeat.
 */
export async function announceAgents(
  nc: NatsConnection,
  worker: string,
  agents: AgentManifest[],
  heartbeatMs = DEFAULT_HEARTBEAT_MS,
  tools: ToolManifest[] = [],
): Promise<Announcer> {
  const announcement = encodeJson({
    worker,
    agents,
    ...(tools.length > 0 ? { tools } : {}),
    heartbeat_ms: heartbeatMs,
  } satisfies z.input<typeof AgentAnnouncement>);
  const announce = () => {
    if (!nc.isClosed()) nc.publish(subjects.agentsAnnounce, announcement);
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
      nc.publish(subjects.agentsWithdraw, encodeJson({ worker } satisfies AgentWithdrawal));
      await nc.flush().catch(() => {});
    },
  };
}
