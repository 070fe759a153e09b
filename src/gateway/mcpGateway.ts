/**
 * `conclave serve`'s two ways to speak MCP, put together from the parts of
 * this folder: Streamable HTTP on `/mcp` (with `/healthz`), checked for its
 * token, and stdio. This module imports the MCP SDK, an optional package:
 * load it through importOptional (src/cli/commands/serve.ts does).
 */
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import type { A2aGateway } from "./a2a/gateway.ts";
import { loadAguiRoute } from "./agui/open.ts";
import { type ListeningGateway, listenGateway, sendJson } from "./http.ts";
import type { GatewayLimits } from "./limits.ts";
import { McpHttpSessions } from "./mcpHttp.ts";
import { createMcpServer } from "./mcpServer.ts";
import { type GatewayClients, type Principals, SOLE_PRINCIPAL } from "./principals.ts";
import type { GatewayTool } from "./tools.ts";

/** What the gateway serves, whichever the transport. */
export interface GatewayOptions {
  /** The client each principal talks through (principals.ts). */
  clients: GatewayClients;
  tools: readonly GatewayTool[];
  version: string;
  /** Failures no answer could carry (a client gone mid-answer): logged, never fatal. */
  onError?: (error: unknown) => void;
}

/** A running HTTP gateway. */
export interface HttpGateway extends ListeningGateway {
  /** The MCP endpoint, e.g. `http://127.0.0.1:7430/mcp`. */
  mcpUrl: string;
  /** The AG-UI endpoint (docs/gateway.md#ag-ui), e.g. `http://127.0.0.1:7430/ag-ui`. */
  aguiUrl: string;
  sessions: McpHttpSessions;
}

/** Serves MCP over Streamable HTTP on `/mcp`, AG-UI on `/ag-ui`, and `/healthz`. */
export async function startMcpHttpGateway(
  options: GatewayOptions & {
    host: string;
    port: number;
    /** Who may call, by token (principals.ts). */
    principals: Principals;
    /** The bounds on sessions, bodies and connections (limits.ts); their defaults when not given. */
    limits?: Partial<GatewayLimits>;
    /** Patience for one AG-UI run's turn, in ms (default agui/route.ts AGUI_TURN_TIMEOUT_MS). */
    timeoutMs?: number;
    /** A2A's routes (a2a/gateway.ts), when `@a2a-js/sdk` is installed. */
    a2a?: A2aGateway | null;
  },
): Promise<HttpGateway> {
  const limits = options.limits ?? {};
  const sessions = new McpHttpSessions({
    createServer: (principal) => createMcpServer({ ...options, principal }),
    ...defined({
      idleMs: limits.sessionIdleMs,
      unusedIdleMs: limits.unusedSessionIdleMs,
      maxSessions: limits.maxSessions,
      sessionsPerCaller: limits.sessionsPerCaller,
    }),
    ...(options.onError ? { onError: options.onError } : {}),
  });
  const agui = await loadAguiRoute({
    clients: options.clients,
    ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
    ...(options.onError ? { onError: options.onError } : {}),
  });
  const listening = await listenGateway({
    host: options.host,
    port: options.port,
    principals: options.principals,
    ...defined({ bodyTimeoutMs: limits.bodyTimeoutMs, maxConnections: limits.maxConnections }),
    routes: {
      "/mcp": sessions.route,
      "/ag-ui": agui,
      ...options.a2a?.routes,
      "/healthz": async (request, response) => {
        request.resume();
        sendJson(response, 200, { status: "ok", tools: options.tools.map((tool) => tool.name) });
      },
    },
    ...(options.onError ? { onError: options.onError } : {}),
  });
  options.a2a?.listening(listening.url);
  return {
    ...listening,
    mcpUrl: `${listening.url}/mcp`,
    aguiUrl: `${listening.url}/ag-ui`,
    sessions,
    close: async () => {
      options.a2a?.close();
      await sessions.close();
      await listening.close();
    },
  };
}

/** `values` without its undefined entries (for options that are optional, not undefined). */
function defined<T extends Record<string, number | undefined>>(values: T): { [K in keyof T]?: number } {
  return Object.fromEntries(Object.entries(values).filter(([, value]) => value !== undefined)) as {
    [K in keyof T]?: number;
  };
}

/**
 * Serves MCP over this process's stdin and stdout (one client: the process
 * that started it). Resolves once the client closes stdin or `signal` aborts.
 */
export async function serveMcpStdio(options: GatewayOptions & { signal?: AbortSignal }): Promise<void> {
  // The process that started the gateway is its one caller: the sole principal.
  const server = createMcpServer({ ...options, principal: SOLE_PRINCIPAL });
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
