import { randomUUID } from "node:crypto";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import { type Announcer, announceAgents } from "../agents/announcement.ts";
import { type AgentDefinition, AgentDefinitionError } from "../agents/defineAgent.ts";
import { AgentDirectory } from "../agents/directory.ts";
import { IdentityFiles } from "../agents/identityFile.ts";
import { busOptions, connectBus } from "../bus/connection.ts";
import { deadLetter } from "../bus/deadLetters.ts";
import type { ServeOptions } from "../bus/serveActor.ts";
import { type Service, startService } from "../bus/service.ts";
import { SharedSteps } from "../bus/sharedSteps.ts";
import { StepReplies } from "../bus/stepReplies.ts";
import { type CognitionBackend, offlineBackend } from "../cognition/backend.ts";
import { CRITIC_NAMES } from "../cognition/critics.ts";
import { setting } from "../config/load.ts";
import { messageOf, singleLine } from "../errors.ts";
import { ensureDeadLetterStream, ensureMemoryStream } from "../eventlog/streams.ts";
import { knowledgeEmbedders } from "../knowledge/embedder.ts";
import { KnowledgeService } from "../knowledge/service.ts";
import { loadBackendPackages } from "../llm/backendFromEnv.ts";
import { createEmbedder, embeddingConfigFromEnv } from "../llm/embeddings.ts";
import { createChatModel, llmConfigFromEnv } from "../llm/index.ts";
import { llmBackend } from "../llm/llmBackend.ts";
import { EpisodeStore } from "../memory/episodeStore.ts";
import { openMemoryGraph } from "../memory/graph/open.ts";
import { defaultPatchAdapters } from "../memory/procedural/index.ts";
import { SessionMemory } from "../memory/sessionMemory.ts";
import { throughElections } from "../nats/elections.ts";
import { CooldownStore } from "../runtime/cooldownStore.ts";
import { skillsEmbedder, WorkerSkills } from "../skills/agentSkills.ts";
import { silentLogger } from "../telemetry/log.ts";
import { type ToolDefinition, ToolDefinitionError } from "../tools/defineTool.ts";
import { parseMcpConfig } from "../tools/mcp/config.ts";
import { openMcpTools } from "../tools/mcp/open.ts";
import type { McpToolSource } from "../tools/mcp/source.ts";
import { packageVersion } from "../version.ts";
import { serveAgent, workerIdentity } from "./agentEndpoints.ts";
import { type AgentModelBinding, AgentModels } from "./agentModels.ts";
import { serveCouncil, serveCritics, serveScheduler, serveVoice } from "./coreEndpoints.ts";
import { serveKnowledge } from "./knowledgeEndpoints.ts";
import { followMemoryErasures, serveMemory } from "./memoryEndpoints.ts";
import { IgnoredMessages, requestsOnly } from "./requestGuard.ts";
import { followSkillsRefresh } from "./skillsReload.ts";
import { serveTool } from "./toolEndpoints.ts";
import { TurnAborts } from "./turnAborts.ts";
import type { WorkerHandle, WorkerOptions } from "./workerOptions.ts";

/** How long a starting worker waits for JetStream to elect its leaders before it gives up. */
export const WORKER_START_PATIENCE_MS = 60_000;

/**
 * Starts a worker: serves the given agents (each on `conclave.agent.<id>`,
 * announced to runners and the scheduler) and core actors over NATS, also
 * as NATS services (ping, info and stats). Several workers may host the same
 * agent: they share a queue group and each request goes to one of them.
 *
 * @example
 * ```ts
 * const worker = await startWorker({ agents: [forecaster] });
 * // … until shutdown:
 * await worker.stop();
 * ```
 */
export async function startWorker(options: WorkerOptions): Promise<WorkerHandle> {
  // Bad input is refused before anything is loaded or connected.
  const twice = repeated(options.agents.map((agent) => agent.manifest.id));
  if (twice) throw new AgentDefinitionError(`agent '${twice}' is given twice`);
  const twiceTool = repeated((options.tools ?? []).map((tool) => tool.manifest.name));
  if (twiceTool) throw new ToolDefinitionError(`tool '${twiceTool}' is given twice`);
  // The worker's LLM server: given, else the environment's; none offline (a given offline backend included).
  const llm =
    options.llm === false
      ? null
      : (options.llm ?? (options.backend && !options.backend.model ? null : llmConfigFromEnv()));
  const backend = options.backend ?? (llm ? llmBackend(createChatModel(llm)) : offlineBackend);
  await loadBackendPackages(backend);
  const models = new AgentModels({ config: llm, model: backend.model, name: backend.name });
  // Made now: a model an agent names but cannot have (no key for its server) stops the worker at start.
  const agentModels = new Map(options.agents.map((agent) => [agent, models.for(agent)]));
  await models.loadPackages();
  const log = options.log ?? silentLogger;
  const skills = options.skills
    ? await WorkerSkills.open(options.skills, skillsEmbedder(process.env, llm), (message) => log.warn(message))
    : undefined;
  const mcp = options.mcpServers
    ? await openMcpTools(parseMcpConfig({ mcpServers: options.mcpServers }, "mcpServers"), {
        onWarning: (message) => log.warn(message),
        onInfo: (message) => log.info(message),
      })
    : null;
  const connectAndServe = async () => {
    const owned = options.nc
      ? null
      : await connectBus(busOptions("worker", { persistent: true, ...options.connection }));
    try {
      return await serveWorker(
        options.nc ?? owned!,
        { ...options, backend, agentModels, agentSkills: skills },
        owned,
        mcp,
      );
    } catch (error) {
      await owned?.close();
      throw error;
    }
  };
  const began = performance.now();
  let waited = false;
  try {
    // A worker started while its cluster elects a leader (a node just came back, a partition just
    // healed) waits the election out instead of exiting: each attempt starts from nothing again.
    const worker = await throughElections(connectAndServe, {
      patienceMs: WORKER_START_PATIENCE_MS,
      onRetry: (error) => {
        if (waited) return;
        waited = true;
        log.warn(
          `JetStream is not ready (${singleLine(messageOf(error), 300)}): trying again for up to ${WORKER_START_PATIENCE_MS / 1_000} s`,
        );
      },
    });
    if (waited) log.info(`JetStream ready: the worker started after ${Math.round(performance.now() - began)} ms`);
    return worker;
  } catch (error) {
    await mcp?.close();
    throw error;
  }
}

/** The first name that stands twice in `names`, if any. */
function repeated(names: readonly string[]): string | undefined {
  return names.find((name, index) => names.indexOf(name) !== index);
}

async function serveWorker(
  nc: NatsConnection,
  options: WorkerOptions & {
    backend: CognitionBackend;
    agentModels: ReadonlyMap<AgentDefinition, AgentModelBinding>;
    agentSkills: WorkerSkills | undefined;
  },
  owned: NatsConnection | null,
  mcp: McpToolSource | null,
): Promise<WorkerHandle> {
  const log = options.log ?? silentLogger;
  const js = jetstream(nc);
  await ensureDeadLetterStream(await jetstreamManager(nc));
  // A cancelled, ended or taken-over turn's calls stop here too: the agent's (or council's, voice's…) work sees its signal abort.
  const cancellations = new TurnAborts(nc);
  // A step asked again (a runner that took its turn over, a resent request) is answered once: on its own
  // worker always, and by any worker of the step unless CONCLAVE_SHARED_STEPS=0 (off the reply's path).
  const shared = setting(process.env, "CONCLAVE_SHARED_STEPS")
    ? new SharedSteps(nc, workerIdentity(), (line) => log.warn(line)).open()
    : undefined;
  const serve: ServeOptions = {
    cancellations,
    steps: new StepReplies(undefined, undefined, shared),
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
  const backend = options.backend;
  // Only requests reach the actors: deliveries of a push consumer aimed at a worker subject are counted, not served.
  const ignored = new IgnoredMessages((count, subject) =>
    log.warn(`ignored ${count} message(s) that are not requests (no inbox reply subject), last on ${subject}`),
  );
  const running: Service[] = [];
  const services = options.services ?? [];
  const ids = options.agents.map((agent) => agent.manifest.id);
  const tools = options.tools ?? [];
  const toolNames = tools.map((tool) => tool.manifest.name);
  let announcer: Announcer | null = null;
  let directory: AgentDirectory | null = null;
  /** What the services opened, closed when the worker stops. */
  const closers: (() => Promise<void>)[] = [];
  const shadowed = new Set<string>();
  /** The tools hosted now: the given ones, and the MCP servers' (one named like a given tool is left out). */
  const hostedTools = (): ToolDefinition[] => [
    ...tools,
    ...(mcp?.tools() ?? []).filter((tool) => {
      const name = tool.manifest.name;
      if (!toolNames.includes(name)) return true;
      if (!shadowed.has(name)) log.warn(`MCP tool ${name} is left out: a tool given to the worker has that name`);
      shadowed.add(name);
      return false;
    }),
  ];
  /** Announces agents and the tools hosted now, under a new worker id, then withdraws the previous announcement. */
  const announce = async () => {
    const next = await announceAgents(
      nc,
      // Unique per worker, not per process: a process may run several workers.
      `${workerIdentity()}/${randomUUID().slice(0, 8)}`,
      options.agents.map((agent) => agent.manifest),
      undefined,
      hostedTools().map((tool) => tool.manifest),
    );
    const previous = announcer;
    announcer = next;
    await previous?.stop();
  };
  let stopping = false;
  let announcing: Promise<void> = Promise.resolve();
  /** Stops what this attempt started (the MCP servers and the connection are the caller's). */
  const release = async () => {
    stopping = true;
    await announcing;
    await announcer?.stop();
    cancellations.close();
    shared?.close();
    directory?.close();
    await Promise.all(running.map((service) => service.stop()));
    await Promise.all(closers.map((close) => close()));
  };
  try {
    await startServices();
  } catch (error) {
    // Nothing half-started is left serving: the worker may be started again (see startWorker).
    await release().catch(() => {});
    throw error;
  }
  return {
    agents: ids,
    get tools() {
      return hostedTools().map((tool) => tool.manifest.name);
    },
    services,
    stop: async () => {
      await release();
      await mcp?.close();
      await owned?.drain();
    },
  };

  async function startServices(): Promise<void> {
    const skills = options.agentSkills;
    if (skills) {
      const unfollow = followSkillsRefresh(nc, skills, workerIdentity(), log);
      closers.push(async () => unfollow());
    }
    if (tools.length > 0 || mcp) {
      const service = startService(nc, "worker", {
        name: "conclave-tools",
        version: packageVersion(),
        description: "Conclave tools",
        metadata: { tools: toolNames.join(","), ...(mcp ? { mcp_servers: mcp.servers.join(",") } : {}) },
      });
      const group = requestsOnly(service, ignored);
      // An endpoint is never taken back: a tool an MCP server stops listing answers that it is no longer offered.
      const served = new Set<string>();
      const serveNew = () => {
        for (const tool of hostedTools()) {
          if (served.has(tool.manifest.name)) continue;
          served.add(tool.manifest.name);
          serveTool(group, tool, serve);
        }
      };
      serveNew();
      running.push(service);
      mcp?.onChange(() => {
        if (stopping) return;
        serveNew();
        announcing = announcing
          .then(() => (stopping ? undefined : announce()))
          .catch((error) => log.warn(`tools not announced again: ${singleLine(messageOf(error), 500)}`));
      });
    }
    if (options.agents.length > 0) {
      const identities = new IdentityFiles(options.identityDir ?? setting(process.env, "CONCLAVE_IDENTITY_DIR"));
      const service = startService(nc, "worker", {
        name: "conclave-agents",
        version: packageVersion(),
        description: "Conclave agent actors",
        metadata: { agents: ids.join(",") },
      });
      for (const agent of options.agents) {
        const model = options.agentModels.get(agent) ?? { model: backend.model, modelName: backend.name };
        serveAgent(
          requestsOnly(service, ignored),
          agent,
          { nc, ...model, skills: options.agentSkills, identities },
          serve,
        );
      }
      running.push(service);
    }
    if (options.agents.length > 0 || tools.length > 0 || mcp) {
      // In the same queue as the announcements of list changes, which may already have begun.
      const first = announcing.then(announce);
      announcing = first.catch(() => {});
      await first;
    }
    for (const name of services) {
      const service = startService(nc, "worker", {
        name: `conclave-${name}`,
        version: packageVersion(),
        description: `Conclave ${name} actor`,
      });
      const group = requestsOnly(service, ignored);
      if (name === "scheduler") {
        directory = await AgentDirectory.open(nc, {
          onInvalid: (message) => log.warn(`ignored an agent announcement: ${message}`),
        });
        serveScheduler(group, await CooldownStore.open(nc), directory, serve);
      }
      if (name === "council") {
        serveCouncil(group, backend, serve);
        serveVoice(group, backend, serve);
      }
      if (name === "critics") serveCritics(group, backend, CRITIC_NAMES, serve);
      if (name === "knowledge") {
        const embedders = knowledgeEmbedders(process.env, options.llm === false ? null : options.llm);
        const knowledge = await KnowledgeService.open(nc, {
          embedder: embedders.indexing,
          queryEmbedder: embedders.query,
          warn: (line) => log.warn(line),
        });
        closers.push(async () => knowledge.close());
        serveKnowledge(group, knowledge, serve);
      }
      if (name === "memory") {
        const jsm = await jetstreamManager(nc);
        await ensureMemoryStream(jsm);
        const store = new EpisodeStore(jetstream(nc), jsm, (subject, seq) =>
          log.warn(`stored episode ${subject} (seq ${seq}) is not a valid episode: left out`),
        );
        const graph = await openMemoryGraph({ nc });
        closers.push(() => graph.close());
        const personaEvery = Number(process.env.CONCLAVE_PERSONA_EVERY ?? 5);
        const memory = new SessionMemory(graph, store, {
          model: backend.model,
          // Procedural patches: `style.*` applied (into the agents' context), any other label noted.
          patchAdapters: [...defaultPatchAdapters(), ...(options.patchAdapters ?? [])],
          ...(options.fallbackPatchAdapter ? { fallbackAdapter: options.fallbackPatchAdapter } : {}),
          ...(Number.isInteger(personaEvery) && personaEvery >= 0 ? { personaEvery } : {}),
          // CONCLAVE_EMBEDDING_MODEL: a model on the LLM's server (/embeddings), `offline`, or unset (none).
          embedder: createEmbedder(embeddingConfigFromEnv(process.env, options.llm === false ? null : options.llm)),
          onEmbeddingError: (error, during) =>
            log.warn(
              `memory ${during}: embeddings failed, going on without them: ${singleLine(messageOf(error), 500)}`,
            ),
        });
        // A turn about to compact has memory's model write the summary (offline: the runner's arena does).
        serveMemory(group, memory, serve, { model: backend.model, warn: (line) => log.warn(line) });
        // An erased session's copy is dropped here too, and the erase is told so (it waits for this answer).
        const unfollow = followMemoryErasures(nc, memory, `${service.name} ${service.id}`, (line) => log.warn(line));
        closers.push(async () => unfollow());
      }
      running.push(service);
    }
  }
}
