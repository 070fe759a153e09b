/**
 * One MCP server, kept connected: started over stdio or reached over
 * Streamable HTTP with the official SDK, its tool list read at each
 * (re)connection and again on `notifications/tools/list_changed`, and
 * reconnected with a bounded backoff when its process exits or its HTTP
 * session is lost. Imports the SDK: load it lazily (see ./open.ts).
 */
import { createInterface } from "node:readline";
import type { Readable } from "node:stream";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport, StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { McpError, ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { MAX_CALL_TIMEOUT_MS } from "../../contracts/ids.ts";
import { backoffMs } from "../../deadline.ts";
import { messageOf, singleLine } from "../../errors.ts";
import { packageVersion } from "../../version.ts";
import type { ToolRunContext } from "../defineTool.ts";
import { isStdioServer, type McpServerConfig } from "./config.ts";
import type { McpToolInfo } from "./mcpTool.ts";
import { type McpCallResult, McpToolError, resultOfCall } from "./result.ts";

/** What a connection tells its owner. */
export interface McpConnectionEvents {
  /** The server's tools, after each (re)connection and list change. */
  onTools(tools: readonly McpToolInfo[]): void;
  /** Something went wrong and is being handled (a lost connection, a failed attempt). */
  onWarning(message: string): void;
  /** Normal operation: connected, a line the server wrote on its stderr. */
  onInfo(message: string): void;
}

/** How a connection retries. */
export interface McpBackoff {
  /** First wait before reconnecting. Default 250 ms. */
  minMs?: number;
  /** Longest wait between attempts; they go on at that pace until the server answers. Default 30 s. */
  maxMs?: number;
}

/** A ping after a transport error, to tell a lost server from a passing fault. */
const HEALTH_CHECK_MS = 5_000;

/** Keeps one MCP server connected and calls its tools. */
export class McpServerConnection {
  readonly name: string;
  readonly #config: McpServerConfig;
  readonly #events: McpConnectionEvents;
  readonly #minMs: number;
  readonly #maxMs: number;
  #client: Client | null = null;
  /** Bumped at each new client: events of an older one are ignored. */
  #generation = 0;
  #tools: readonly McpToolInfo[] = [];
  #attempts = 0;
  #timer: NodeJS.Timeout | null = null;
  #connecting: Promise<boolean> | null = null;
  #checking = false;
  #listing: Promise<void> = Promise.resolve();
  #closed = false;

  constructor(name: string, config: McpServerConfig, events: McpConnectionEvents, backoff: McpBackoff = {}) {
    this.name = name;
    this.#config = config;
    this.#events = events;
    this.#minMs = backoff.minMs ?? 250;
    this.#maxMs = Math.max(this.#minMs, backoff.maxMs ?? 30_000);
  }

  /** True while a session with the server is open. */
  get connected(): boolean {
    return this.#client !== null;
  }

  /** The tools the server listed last. */
  get tools(): readonly McpToolInfo[] {
    return this.#tools;
  }

  /** Connects once; on failure, goes on trying in the background (true when connected now). */
  start(): Promise<boolean> {
    return this.#connect();
  }

  /**
   * Calls `tool` by its name on the server; the Conclave result (see
   * resultOfCall), or a McpToolError on one line. A request refused because the
   * server forgot the HTTP session (restarted) was not run: it is made again
   * once, on a new session.
   */
  async call(tool: string, args: Record<string, unknown>, ctx: ToolRunContext): Promise<unknown> {
    for (let attempt = 0; ; attempt++) {
      const client = this.#client;
      if (!client) throw new McpToolError(`MCP server ${this.name} is not connected (reconnecting)`);
      if (!this.#tools.some((listed) => listed.name === tool))
        throw new McpToolError(`MCP server ${this.name} no longer offers the tool ${tool}`);
      try {
        const result = await client.callTool({ name: tool, arguments: args }, undefined, {
          signal: ctx.signal,
          timeout: MAX_CALL_TIMEOUT_MS,
          resetTimeoutOnProgress: true,
        });
        return resultOfCall(tool, result as McpCallResult);
      } catch (error) {
        if (error instanceof McpToolError) throw error;
        if (ctx.signal.aborted) throw new McpToolError(`MCP server ${this.name}, tool ${tool}: the call was abandoned`);
        const generation = this.#generation;
        if (error instanceof StreamableHTTPError && error.code === 404) {
          // The server no longer knows the session (it restarted): the request was not run.
          this.#lost(generation, "the server forgot the session");
          if (attempt === 0 && (await this.#connect())) continue;
        } else if (!(error instanceof McpError)) this.#transportError(generation, error as Error);
        throw new McpToolError(`MCP server ${this.name}, tool ${tool}: ${messageOf(error)}`);
      }
    }
  }

  /** Disconnects for good (a stdio server is stopped). */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    const client = this.#client;
    this.#client = null;
    this.#generation++;
    await client?.close().catch(() => {});
  }

  /** One attempt at a new session, shared by whoever asks meanwhile; schedules the next on failure. */
  #connect(): Promise<boolean> {
    this.#connecting ??= this.#attempt().finally(() => {
      this.#connecting = null;
    });
    return this.#connecting;
  }

  async #attempt(): Promise<boolean> {
    if (this.#closed) return false;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    const old = this.#client;
    this.#client = null;
    const generation = ++this.#generation;
    await old?.close().catch(() => {});
    const client = new Client({ name: "conclave", version: packageVersion() }, { capabilities: {} });
    client.onclose = () => this.#lost(generation, "the connection closed");
    client.onerror = (error) => this.#transportError(generation, error);
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => this.#refresh(generation));
    try {
      await client.connect(this.#transport());
      if (this.#closed || generation !== this.#generation) {
        await client.close().catch(() => {});
        return false;
      }
      this.#client = client;
      await this.#refresh(generation);
      this.#events.onInfo(`MCP server ${this.name}: connected, ${this.#tools.length} tool(s)`);
      this.#attempts = 0;
      return this.#client === client;
    } catch (error) {
      await client.close().catch(() => {});
      if (generation === this.#generation) {
        this.#client = null;
        this.#retry(`cannot connect: ${messageOf(error)}`);
      }
      return false;
    }
  }

  #transport(): Transport {
    const config = this.#config;
    if (!isStdioServer(config)) {
      return new StreamableHTTPClientTransport(new URL(config.url), {
        requestInit: { headers: config.headers },
        // This connection reconnects itself (a new session); the SDK's own retries of the event stream would only delay it.
        reconnectionOptions: {
          maxRetries: 0,
          initialReconnectionDelay: 1_000,
          maxReconnectionDelay: 1_000,
          reconnectionDelayGrowFactor: 1,
        },
      });
    }
    const transport = new StdioClientTransport({
      command: config.command,
      args: config.args,
      env: config.env,
      ...(config.cwd ? { cwd: config.cwd } : {}),
      stderr: "pipe",
    });
    // Read, or the server blocks once the pipe is full; each line is logged.
    const stderr = transport.stderr;
    if (stderr)
      createInterface({ input: stderr as Readable }).on("line", (line) => {
        if (line.trim()) this.#events.onInfo(`MCP server ${this.name}: ${singleLine(line, 500)}`);
      });
    return transport;
  }

  /** Reads the tool list (every page), one read at a time; a newer client's list wins. */
  #refresh(generation: number): Promise<void> {
    this.#listing = this.#listing.then(async () => {
      const client = this.#client;
      if (!client || generation !== this.#generation) return;
      const tools: McpToolInfo[] = [];
      let cursor: string | undefined;
      try {
        do {
          const page = await client.listTools(cursor ? { cursor } : {});
          tools.push(...(page.tools as McpToolInfo[]));
          cursor = page.nextCursor;
        } while (cursor);
      } catch (error) {
        this.#events.onWarning(`MCP server ${this.name}: cannot list its tools: ${messageOf(error)}`);
        return;
      }
      if (generation !== this.#generation) return;
      this.#tools = tools;
      this.#events.onTools(tools);
    });
    return this.#listing;
  }

  /** A transport error: the session may be gone (an HTTP event stream cut); a ping tells. */
  #transportError(generation: number, error: Error): void {
    if (this.#checking || generation !== this.#generation || !this.#client) return;
    this.#checking = true;
    const client = this.#client;
    client
      .ping({ timeout: HEALTH_CHECK_MS })
      .then(
        () => {},
        () => this.#lost(generation, messageOf(error)),
      )
      .finally(() => {
        this.#checking = false;
      });
  }

  /** The session of `generation` is gone: reconnect, unless it is already being replaced. */
  #lost(generation: number, why: string): void {
    if (this.#closed || generation !== this.#generation || !this.#client) return;
    const client = this.#client;
    this.#client = null;
    this.#generation++;
    void client.close().catch(() => {});
    this.#retry(`disconnected (${why})`);
  }

  /** Schedules the next attempt: the wait doubles from minMs up to maxMs. */
  #retry(why: string): void {
    if (this.#closed || this.#timer) return;
    const wait = backoffMs(this.#attempts, { baseMs: this.#minMs, maxMs: this.#maxMs });
    this.#attempts++;
    this.#events.onWarning(`MCP server ${this.name}: ${singleLine(why, 300)}; reconnecting in ${wait} ms`);
    this.#timer = setTimeout(() => {
      this.#timer = null;
      void this.#connect();
    }, wait);
    this.#timer.unref();
  }
}
