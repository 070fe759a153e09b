import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import type { Service } from "@nats-io/services";
import { AGENTS } from "../../agents/index.ts";
import { guardedServices } from "../bus/replies.ts";
import type { ServeOptions } from "../bus/serveActor.ts";
import { type CognitionBackend, offlineBackend } from "../cognition/backend.ts";
import { CRITIC_NAMES } from "../cognition/critics.ts";
import { ConclaveError, singleLine } from "../errors.ts";
import { deadLetter } from "../eventlog/deadLetters.ts";
import { ensureDeadLetterStream, ensureMemoryStream } from "../eventlog/streams.ts";
import { EpisodeStore } from "../memory/episodeStore.ts";
import { type Logger, silentLogger } from "../runtime/log.ts";
import { serveAgent } from "./agentEndpoints.ts";
import { CooldownStore } from "./cooldownStore.ts";
import { serveCouncil, serveCritics, serveScheduler, serveVoice } from "./coreEndpoints.ts";
import { serveMemory } from "./memoryEndpoints.ts";
import { IgnoredMessages, requestsOnly } from "./requestGuard.ts";

export const CORE_SERVICES = ["scheduler", "council", "critics", "memory"] as const;
export type CoreService = (typeof CORE_SERVICES)[number];

/** Raised when a worker is asked for agents or services that do not exist. */
export class UnknownAgentError extends ConclaveError<"unknown_agent"> {
  constructor(message: string) {
    super("unknown_agent", message);
  }
}

/** `*` matches any run of characters; patterns are comma-separated (`emotion.*,inhibition.censor`). */
export function matchAgents(patterns: string, roster: Iterable<string> = AGENTS.keys()): string[] {
  const ids = [...roster];
  const matched = new Set<string>();
  for (const pattern of patterns
    .split(",")
    .map((part) => part.trim())
    .filter(Boolean)) {
    const regex = new RegExp(`^${pattern.replace(/[.+?^${}()|[\]\\]/g, "\\$&").replace(/\*/g, ".*")}$`);
    const hits = ids.filter((id) => regex.test(id));
    if (hits.length === 0)
      throw new UnknownAgentError(`no agent matches '${pattern}'; the roster is: ${ids.join(", ")}`);
    for (const id of hits) matched.add(id);
  }
  return [...matched];
}

export interface WorkerOptions {
  /** Agent ids to host (see matchAgents). */
  agents: string[];
  services: CoreService[];
  /** Where agents, council, voice and critics do their thinking. Default: the offline model. */
  backend?: CognitionBackend;
  log?: Logger;
  serve?: ServeOptions;
}

export interface WorkerHandle {
  readonly agents: string[];
  readonly services: CoreService[];
  /** Stops answering; requests in progress still get their reply. */
  stop(): Promise<void>;
}

/**
 * A worker process's actors, announced as NATS services (ping, info and stats
 * through the services API). Several workers may host the same agent: they
 * share a queue group and each request goes to one of them.
 */
export async function startWorker(nc: NatsConnection, options: WorkerOptions): Promise<WorkerHandle> {
  const log = options.log ?? silentLogger;
  const js = jetstream(nc);
  await ensureDeadLetterStream(await jetstreamManager(nc));
  const serve: ServeOptions = {
    onError: (endpoint, error, request) => {
      log.warn(`${endpoint}: ${error.code}: ${singleLine(error.message, 1_000)}`);
      // Bad input is kept for inspection; a failure of the actor itself is only logged.
      if (error.code === "bad_json" || error.code === "invalid_request" || error.code === "payload_too_large") {
        void deadLetter(js, "worker", { ...request, code: error.code, reason: error.message }).then((lost) => {
          if (lost) log.error(`dead letter not stored: ${lost.message}`);
        });
      }
    },
    ...options.serve,
  };
  const backend = options.backend ?? offlineBackend;
  // Only requests reach the actors: deliveries of a push consumer aimed at a worker subject are counted, not served.
  const ignored = new IgnoredMessages((count, subject) =>
    log.warn(`ignored ${count} message(s) that are not requests (no inbox reply subject), last on ${subject}`),
  );
  const svcm = guardedServices(nc);
  const running: Service[] = [];
  if (options.agents.length > 0) {
    const service = await svcm.add({
      name: "conclave-agents",
      version: "0.1.0",
      description: "Conclave agent actors",
      metadata: { agents: options.agents.join(",") },
    });
    for (const id of options.agents) {
      const agent = AGENTS.get(id);
      if (!agent) throw new UnknownAgentError(`no agent '${id}'`);
      serveAgent(requestsOnly(service, ignored), agent, backend, serve);
    }
    running.push(service);
  }
  for (const name of options.services) {
    const service = await svcm.add({
      name: `conclave-${name}`,
      version: "0.1.0",
      description: `Conclave ${name} actor`,
    });
    const group = requestsOnly(service, ignored);
    if (name === "scheduler") serveScheduler(group, await CooldownStore.open(nc), serve);
    if (name === "council") {
      serveCouncil(group, backend, serve);
      serveVoice(group, backend, serve);
    }
    if (name === "critics") serveCritics(group, backend, CRITIC_NAMES, serve);
    if (name === "memory") {
      const jsm = await jetstreamManager(nc);
      await ensureMemoryStream(jsm);
      const store = new EpisodeStore(jetstream(nc), jsm, (subject, seq) =>
        log.warn(`stored episode ${subject} (seq ${seq}) is not a valid episode: left out`),
      );
      serveMemory(group, store, serve);
    }
    running.push(service);
  }
  return {
    agents: options.agents,
    services: options.services,
    stop: async () => {
      await Promise.all(running.map((service) => service.stop()));
    },
  };
}
