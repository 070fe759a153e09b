/**
 * The lazy door to the gateway's protocol servers: `@modelcontextprotocol/sdk`
 * is an optional package, imported only when `conclave serve` starts.
 */
import { importOptional } from "../optionalPackages.ts";

/** The MCP gateway module; a MissingDependencyError (one line: what to install) without the SDK. */
export function loadMcpGateway(): Promise<typeof import("./mcpGateway.ts")> {
  return importOptional("conclave serve (MCP)", ["@modelcontextprotocol/sdk"], () => import("./mcpGateway.ts"));
}
