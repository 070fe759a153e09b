/**
 * The lazy door to the gateway's protocol servers: `@modelcontextprotocol/sdk`
 * is an optional package, imported only when `conclave serve` starts.
 */
import { importOptional } from "../optionalPackages.ts";

/** The MCP gateway module; a MissingDependencyError (one line: what to install) without the SDK. */
export function loadMcpGateway(): Promise<typeof import("./mcpGateway.ts")> {
  return importOptional("conclave serve (MCP)", ["@modelcontextprotocol/sdk"], () => import("./mcpGateway.ts"));
}

/** The A2A gateway module; a MissingDependencyError (one line: what to install) without `@a2a-js/sdk`. */
export function loadA2aGateway(): Promise<typeof import("./a2a/gateway.ts")> {
  return importOptional("conclave serve (A2A)", ["@a2a-js/sdk"], () => import("./a2a/gateway.ts"));
}
