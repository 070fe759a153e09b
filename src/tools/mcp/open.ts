/**
 * The lazy door to MCP tool sources: `@modelcontextprotocol/sdk` is an
 * optional package, imported only when MCP servers are asked for.
 */
import { importOptional } from "../../optionalPackages.ts";
import type { McpServerConfig } from "./config.ts";
import type { McpToolSource, McpToolSourceOptions } from "./source.ts";

/**
 * Connects to the MCP servers and answers their tools as Conclave tools (see
 * McpToolSource); a MissingDependencyError (one line: what to install) when
 * `@modelcontextprotocol/sdk` is not installed.
 */
export async function openMcpTools(
  servers: ReadonlyMap<string, McpServerConfig>,
  options: McpToolSourceOptions = {},
): Promise<McpToolSource> {
  const { McpToolSource } = await importOptional(
    "MCP servers as tool sources (--mcp)",
    ["@modelcontextprotocol/sdk"],
    () => import("./source.ts"),
  );
  return McpToolSource.open(servers, options);
}
