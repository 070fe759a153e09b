/**
 * `conclave serve`'s two ways to speak MCP, put together from the parts of
 * this folder: Streamable HTTP on `/mcp` (with `/healthz`), checked for its
 * token, and stdio. This module imports the MCP SDK, an optional package:
 * load it through importOptional (src/cli/commands/serve.ts does).
 */
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import type { ConclaveClient } from "../client/client.ts";
import { type ListeningGateway, listenGateway, sendJson } from "./http.ts";
import { McpHttpSessions } from "./mcpHttp.ts";
import { createMcpServer } from "./mcpServer.ts";
import type { GatewayTool } from "./tools.ts";

/** What the gateway serves, whichever the transport. */
export interface GatewayOptions {
  client: ConclaveClient;
  tools: readonly GatewayTool[];
  version: string;
  /** Failures no answer could carry (a client gone mid-answer): logged, never fatal. */
  onError?: (error: unknown) => void;
}

/** A running HTTP gateway. */
export interface HttpGateway extends ListeningGateway {
  /** The MCP endpoint, e.g. `http://127.0.0.1:7430/mcp`. */
  mcpUrl: string;
  sessions: McpHttpSessions;
}

/** Serves MCP over Streamable HTTP on `/mcp`, and `/healthz`. */
export async function startMcpHttpGateway(
  options: GatewayOptions & { host: string; port: number; token: string | null; idleMs?: number },
): Promise<HttpGateway> {
  const sessions = new McpHttpSessions({
    createServer: () => createMcpServer(options),
    ...(options.idleMs !== undefined ? { idleMs: options.idleMs } : {}),
    ...(options.onError ? { onError: options.onError } : {}),
  });
  const listening = await listenGateway({
    host: options.host,
    port: options.port,
    token: options.token,
    routes: {
      "/mcp": sessions.route,
      "/healthz": async (request, response) => {
        request.resume();
        sendJson(response, 200, { status: "ok", tools: options.tools.map((tool) => tool.name) });
      },
    },
    ...(options.onError ? { onError: options.onError } : {}),
  });
  return {
    ...listening,
    mcpUrl: `${listening.url}/mcp`,
    sessions,
    close: async () => {
      await sessions.close();
      await listening.close();
    },
  };
}

/**
 * Serves MCP over this process's stdin and stdout (one client: the process
 * that started it). Resolves once the client closes stdin or `signal` aborts.
 */
export async function serveMcpStdio(options: GatewayOptions & { signal?: AbortSignal }): Promise<void> {
  const server = createMcpServer(options);
  const transport = new StdioServerTransport();
  const closed = new Promise<void>((resolve) => {
    transport.onclose = () => resolve();
    process.stdin.once("end", () => resolve());
    options.signal?.addEventListener("abort", () => resolve(), { once: true });
  });
  transport.onerror = (error) => options.onError?.(error);
  await server.connect(transport);
  await closed;
  await server.close().catch(() => {});
}
