/**
 * The tools of several MCP servers as Conclave tools, kept current as the
 * servers come and go and change their lists. Imports the SDK (through
 * ./connection.ts): load it lazily (see ./open.ts).
 */
import { z } from "zod";
import type { ToolManifest } from "../../contracts/tool.ts";
import type { ToolDefinition, ToolRunContext } from "../defineTool.ts";
import type { McpServerConfig } from "./config.ts";
import { type McpBackoff, McpServerConnection } from "./connection.ts";
import { brandTool, mcpToolDefinition } from "./mcpTool.ts";
import { McpToolError } from "./result.ts";

/** What `openMcpTools` takes besides the servers. */
export interface McpToolSourceOptions {
  /** Told of lost connections and attempts that failed. Default: nothing. */
  onWarning?: (message: string) => void;
  /** Told of connections made and of the servers' stderr lines. Default: nothing. */
  onInfo?: (message: string) => void;
  /** How lost servers are retried. */
  backoff?: McpBackoff;
}

/** The live tool under one Conclave name: where it comes from, and its definition now. */
interface Entry {
  server: string;
  tool: string;
  current: ToolDefinition;
  /** Stable: what a worker serves; it reads `current` at each call. */
  live: ToolDefinition;
  /** False while its server no longer lists it. */
  listed: boolean;
}

/**
 * The MCP servers' tools, each under its mapped name (see mcpToolName). A tool
 * two servers map to the same name is kept for the first server and left out
 * (with a warning) for the other.
 */
export class McpToolSource {
  readonly #connections: McpServerConnection[] = [];
  readonly #entries = new Map<string, Entry>();
  readonly #listeners = new Set<() => void>();
  readonly #warn: (message: string) => void;
  /** What was last reported, to tell listeners only of real changes. */
  #reported = "";

  private constructor(options: McpToolSourceOptions) {
    this.#warn = options.onWarning ?? (() => {});
  }

  /** Connects to every server (each one attempt now; those that fail are retried in the background). */
  static async open(servers: ReadonlyMap<string, McpServerConfig>, options: McpToolSourceOptions = {}) {
    const source = new McpToolSource(options);
    for (const [name, config] of servers) {
      const connection = new McpServerConnection(
        name,
        config,
        {
          onTools: () => source.#update(),
          onWarning: source.#warn,
          onInfo: options.onInfo ?? (() => {}),
        },
        options.backoff,
      );
      source.#connections.push(connection);
    }
    await Promise.all(source.#connections.map((connection) => connection.start()));
    return source;
  }

  /** The servers' names, in the configuration's order. */
  get servers(): string[] {
    return this.#connections.map((connection) => connection.name);
  }

  /** True when server `name` has a session now. */
  connected(name: string): boolean {
    return this.#connections.some((connection) => connection.name === name && connection.connected);
  }

  /**
   * The tools the servers list now, each a stable definition (the same object
   * for a name as long as the source lives) that calls the current one.
   */
  tools(): ToolDefinition[] {
    return [...this.#entries.values()].filter((entry) => entry.listed).map((entry) => entry.live);
  }

  /** The MCP server and tool a Conclave name stands for, when a server lists it now. */
  origin(name: string): { server: string; tool: string } | undefined {
    const entry = this.#entries.get(name);
    return entry?.listed ? { server: entry.server, tool: entry.tool } : undefined;
  }

  /** Calls `listener` when the tools (names or manifests) change; answers how to stop. */
  onChange(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Disconnects from every server (stdio servers are stopped). */
  async close(): Promise<void> {
    this.#listeners.clear();
    await Promise.all(this.#connections.map((connection) => connection.close()));
  }

  /** Rebuilds the map from every server's last list, and tells listeners when it changed. */
  #update(): void {
    for (const entry of this.#entries.values()) entry.listed = false;
    for (const connection of this.#connections) {
      const call = (tool: string, args: Record<string, unknown>, ctx: ToolRunContext) =>
        connection.call(tool, args, ctx);
      for (const info of connection.tools) {
        const current = mcpToolDefinition(connection.name, info, call, this.#warn);
        const name = current.manifest.name;
        const entry = this.#entries.get(name);
        if (entry?.listed) {
          this.#warn(
            `MCP tool ${connection.name}/${info.name} is left out: its name ${name} is taken by ${entry.server}/${entry.tool}`,
          );
          continue;
        }
        if (entry) Object.assign(entry, { server: connection.name, tool: info.name, current, listed: true });
        else {
          const fresh: Entry = { server: connection.name, tool: info.name, current, listed: true, live: current };
          fresh.live = liveDefinition(fresh);
          this.#entries.set(name, fresh);
        }
      }
    }
    const manifests: ToolManifest[] = this.tools().map((tool) => tool.manifest);
    const report = JSON.stringify(manifests);
    if (report === this.#reported) return;
    this.#reported = report;
    for (const listener of this.#listeners) listener();
  }
}

/** A definition that reads its entry at each use: its schema and run follow the server's latest list. */
function liveDefinition(entry: Entry): ToolDefinition {
  const definition = {
    get manifest() {
      return entry.current.manifest;
    },
    get input() {
      return entry.current.input;
    },
    output: z.unknown(),
    run: (input: unknown, ctx: ToolRunContext) => {
      if (!entry.listed) throw new McpToolError(`MCP server ${entry.server} no longer offers the tool ${entry.tool}`);
      return entry.current.run(input, ctx);
    },
  } as ToolDefinition;
  return brandTool(definition);
}
