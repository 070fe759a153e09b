/**
 * What `startWorker` takes and what it gives back: the options of a worker
 * process (agents, tools, core actors, model, skills, logging) and its handle.
 */
import type { NatsConnection } from "@nats-io/nats-core";
import type { AgentDefinition } from "../agents/defineAgent.ts";
import type { BusOptions } from "../bus/connection.ts";
import type { ServeOptions } from "../bus/serveActor.ts";
import type { CognitionBackend } from "../cognition/backend.ts";
import type { LlmConfig } from "../llm/index.ts";
import type { PatchAdapter } from "../memory/procedural/index.ts";
import type { Logger } from "../telemetry/log.ts";
import type { ToolDefinition } from "../tools/defineTool.ts";

/** The core actors a worker can host beside agents (`services` of `startWorker`). */
export const CORE_SERVICES = ["scheduler", "council", "critics", "memory", "knowledge"] as const;
/**
 * One of CORE_SERVICES: `scheduler`, `council` (with the voice), `critics`, `memory`, `knowledge`
 * (knowledge collections: add, list, search, remove; docs/knowledge.md).
 */
export type CoreService = (typeof CORE_SERVICES)[number];

/** What `startWorker` takes. */
export interface WorkerOptions {
  /** The agents to host: yours (made with `defineAgent`) and built-in ones (`builtinAgents()`). */
  agents: readonly AgentDefinition[];
  /** Tools to host (made with `defineTool`), each on `conclave.tool.<name>`, announced with the agents. Default: none. */
  tools?: readonly ToolDefinition[];
  /**
   * MCP servers whose tools to host beside `tools`: the `mcpServers` object of
   * the format MCP clients share, `{ "<name>": { "command": "…", "args": […],
   * "env": {…} } }` (started over stdio) or `{ "<name>": { "url": "http://…" } }`
   * (Streamable HTTP). Each tool is served on `conclave.tool.mcp_<server>_<tool>`
   * (see `mcpToolName`); the worker announces the tools the servers list now,
   * again whenever that changes, and reconnects a lost server. Needs the
   * optional package `@modelcontextprotocol/sdk`. Default: none.
   */
  mcpServers?: Record<string, unknown>;
  /** Core actors to host beside them: the scheduler, council (+ voice), critics, memory, knowledge. Default: none. */
  services?: readonly CoreService[];
  /**
   * With the memory service: adapters of the procedural patches a turn teaches (made with
   * `definePatchAdapter`), chosen by label (exact, else the longest dotted prefix), beside the
   * built-in `style` adapter (one of yours with label `style` replaces it). Default: the built-in one.
   */
  patchAdapters?: readonly PatchAdapter[];
  /** With the memory service: runs the patches no adapter's label covers. Default: records them as `noted`. */
  fallbackPatchAdapter?: PatchAdapter;
  /** A connection to use (the worker does not close it). Default: one opened with `connection`. */
  nc?: NatsConnection;
  /**
   * How to connect when no `nc` is given, as the `worker` role: servers, TLS,
   * user and password, nkey or creds file (as `connect` takes them). Defaults
   * from the environment (`CONCLAVE_NATS_URL`, …), else
   * nats://127.0.0.1:4222 with the development credentials of nats.conf. The
   * connection waits for the server and reconnects forever.
   */
  connection?: Partial<BusOptions>;
  /**
   * The OpenAI-compatible model agents (`ctx.model`), council, voice and
   * critics use; `false` for the deterministic offline mode. Default: from
   * `CONCLAVE_LLM_BASE_URL`/`CONCLAVE_LLM_MODEL`, else offline. An agent
   * whose definition names a model gets that one (see `AgentSpec.model`).
   */
  llm?: LlmConfig | false;
  /**
   * Where the thinking happens, overriding `llm`.
   * @internal tests
   */
  backend?: CognitionBackend;
  /**
   * A skills directory (docs/skills.md), loaded and indexed once when the worker starts: for each
   * agent request, the skills its user message loads are the agent's `ctx.skills` (built-in agents
   * in LLM mode put their instructions in their system prompt) and are named in its reply.
   * Embeddings: the configured embedding model (`CONCLAVE_EMBEDDING_MODEL`), else the offline
   * embedder. `threshold` and `maxLazy` pick lazy skills as `conclave skills select` does
   * (defaults 0.35 and 3). Default: none.
   */
  skills?: { dir: string; threshold?: number; maxLazy?: number };
  /**
   * The directory of the agents' identity files, `<dir>/<agent-id>/identity.md` (docs/context.md,
   * "Identity files"). Default: `CONCLAVE_IDENTITY_DIR`, else `.conclave/agents` under the working directory.
   */
  identityDir?: string;
  /** Where the worker logs. Default: nothing. */
  log?: Logger;
  /**
   * Inspection and error hooks of the served actors.
   * @internal the CLI's --inspect
   */
  serve?: ServeOptions;
}

/** A running worker. */
export interface WorkerHandle {
  /** Ids of the agents it hosts. */
  readonly agents: string[];
  /** Names of the tools it hosts now (its MCP servers' tools included). */
  readonly tools: string[];
  readonly services: readonly CoreService[];
  /** Withdraws its agents and stops answering; requests in progress still get their reply. */
  stop(): Promise<void>;
}
