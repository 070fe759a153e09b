/**
 * The gateway over HTTP (MCP on `/mcp`, AG-UI on `/ag-ui`, A2A when its SDK is
 * installed), started from the library (`startGateway`) or by `conclave serve`
 * (`openHttpGateway`, with its principals file and tenants).
 */
import type { ConclaveClient } from "../client/client.ts";
import { messageOf } from "../errors.ts";
import { MissingDependencyError } from "../optionalPackages.ts";
import { followErasures } from "../runtime/runner/sessionErasures.ts";
import type { Logger } from "../telemetry/log.ts";
import { packageVersion } from "../version.ts";
import { checkExposure } from "./access.ts";
import { converseTool } from "./converse.ts";
import { gatewayLimits } from "./limits.ts";
import { loadA2aGateway, loadMcpGateway } from "./open.ts";
import { GatewayClients, Principals } from "./principals.ts";
import { loadRecipeDir, recipeTool } from "./recipeTools.ts";
import type { GatewayTool } from "./tools.ts";

/** The gateway's port unless one is given (`conclave serve --port`). */
export const DEFAULT_GATEWAY_PORT = 7430;
/** How long the gateway waits for one turn or recipe run, in ms, unless told (`conclave serve --timeout`). */
export const DEFAULT_GATEWAY_TIMEOUT_MS = 120_000;

/** What {@link startGateway} takes. */
export interface StartGatewayOptions {
  /** The client the gateway talks to Conclave through; its owner closes it, after the gateway. */
  client: ConclaveClient;
  /**
   * The interface to listen on. Beyond loopback a `token` is required.
   * @default "127.0.0.1"
   */
  host?: string;
  /**
   * The port; 0 for any free one.
   * @default 7430
   */
  port?: number;
  /**
   * The bearer token every caller must send (16 characters or more). Without one, only callers on
   * this machine are served.
   * @default none
   */
  token?: string;
  /**
   * A directory of recipe files (YAML), each offered as an MCP tool beside `converse`.
   * @default none
   */
  recipes?: string;
  /**
   * How long one turn or recipe run may take, in ms.
   * @default 120000
   */
  timeoutMs?: number;
  /**
   * Where the gateway logs (failures no answer could carry, A2A being off).
   * @default nothing
   */
  log?: Logger;
}

/** A running gateway. */
export interface GatewayHandle {
  /** Its base address, e.g. `http://127.0.0.1:7430`. */
  readonly url: string;
  /** The MCP endpoint (Streamable HTTP). */
  readonly mcpUrl: string;
  /** The AG-UI endpoint (docs/gateway.md). */
  readonly aguiUrl: string;
  /** The A2A agent card, or null when `@a2a-js/sdk` is not installed. */
  readonly a2aCardUrl: string | null;
  /** Stops listening and ends its MCP sessions; the client stays open. */
  close(): Promise<void>;
}

/**
 * Starts the gateway (docs/gateway.md) in this process: MCP over Streamable HTTP on `/mcp` with the
 * `converse` tool (and one tool per recipe of `recipes`), AG-UI on `/ag-ui`, and A2A when
 * `@a2a-js/sdk` is installed. Needs the optional package `@modelcontextprotocol/sdk`. A host beyond
 * loopback without a token is refused before anything listens.
 *
 * @example
 * ```ts
 * import { connect, startGateway } from "conclave";
 *
 * const client = await connect();
 * const gateway = await startGateway({ client, port: 0 });
 * console.log(gateway.mcpUrl);
 * ```
 */
export async function startGateway(options: StartGatewayOptions): Promise<GatewayHandle> {
  const principals = Principals.sole(options.token ?? null);
  const timeoutMs = options.timeoutMs ?? DEFAULT_GATEWAY_TIMEOUT_MS;
  return openHttpGateway({
    client: options.client,
    clients: GatewayClients.single(options.client),
    principals,
    tools: gatewayTools(options.recipes, timeoutMs),
    host: options.host ?? "127.0.0.1",
    port: options.port ?? DEFAULT_GATEWAY_PORT,
    timeoutMs,
    ...(options.log ? { log: options.log } : {}),
  });
}

/** `converse`, and one tool per recipe of the directory `recipes`. */
export function gatewayTools(recipes: string | undefined, timeoutMs: number): GatewayTool[] {
  const limits = { timeoutMs };
  return [converseTool(limits), ...(recipes ? loadRecipeDir(recipes).map((loaded) => recipeTool(loaded, limits)) : [])];
}

/** What {@link openHttpGateway} needs: `conclave serve` gives its principals file and tenants' clients. */
export interface HttpGatewayParts {
  client: ConclaveClient;
  clients: GatewayClients;
  principals: Principals;
  tools: GatewayTool[];
  host: string;
  port: number;
  timeoutMs: number;
  log?: Logger;
}

/** Starts the HTTP gateway from its parts; the clients' owner closes them after `close`. */
export async function openHttpGateway(parts: HttpGatewayParts): Promise<GatewayHandle> {
  const { client, clients, principals, tools, host, port, timeoutMs, log } = parts;
  // Checked before anything listens: a gateway open to the network without a token never starts.
  checkExposure(host, principals.size > 0 ? "given" : null);
  const gateway = await loadMcpGateway();
  const bounds = gatewayLimits();
  const onError = (error: unknown) => log?.debug(`gateway: ${messageOf(error)}`);
  const options = { clients, tools, version: packageVersion(), onError };
  // A2A is served when its SDK is installed; without it the gateway still serves MCP, and says what to install.
  const a2a = await loadA2aGateway().then(
    ({ createA2aGateway }) =>
      createA2aGateway({
        ...options,
        token: principals.size > 0,
        timeoutMs,
        tasks: { maxTasks: bounds.maxTasks, ttlMs: bounds.taskTtlMs, maxBytes: bounds.taskBytes },
      }),
    (error: unknown) => {
      if (!(error instanceof MissingDependencyError)) throw error;
      log?.warn(`A2A is off: ${error.message}`);
      return null;
    },
  );
  // An erased session's A2A tasks go too (the client role may not answer the erase: it is not waited for).
  const unfollow = a2a
    ? followErasures(
        client.nc,
        (sessionId) => {
          const dropped = a2a.forgetSession(sessionId);
          if (dropped > 0) log?.info(`session ${sessionId} erased: ${dropped} A2A task(s) dropped`);
        },
        undefined,
        (message) =>
          log?.warn(
            `erased sessions' A2A tasks are kept until they expire: ${message} (grant the client role conclave.session.erased)`,
          ),
      )
    : () => {};
  // AG-UI runs get the same patience as the tools.
  const http = await gateway.startMcpHttpGateway({
    ...options,
    host,
    port,
    principals,
    a2a,
    timeoutMs,
    limits: bounds,
  });
  return {
    url: http.url,
    mcpUrl: http.mcpUrl,
    aguiUrl: http.aguiUrl,
    a2aCardUrl: a2a ? `${http.url}/.well-known/agent-card.json` : null,
    close: async () => {
      unfollow();
      await http.close();
    },
  };
}
