/**
 * How an MCP server's tool is named in Conclave. A Conclave tool name is a
 * NATS subject token and an OpenAI function name (`^[a-z][a-z0-9_]{0,63}$`);
 * MCP tool names are freer (`Get-Weather.v2`, `searchRepos`). The mapping is a
 * function of the server's name and the tool's alone, so a recipe can name a
 * tool by `mcp://<server>/<tool>` without asking the server, and a tool keeps
 * its name across reconnects and list changes.
 */
import { createHash } from "node:crypto";
import { ToolName } from "../../contracts/tool.ts";
import { ConclaveError } from "../../errors.ts";

/** Longest Conclave tool name. */
const MAX_NAME = 64;
/** `_` and 8 hex digits. */
const SUFFIX = 9;

/** Lowercase, every character but a-z, 0-9 and `_` made `_`. */
const sanitize = (text: string): string => text.toLowerCase().replace(/[^a-z0-9_]/g, "_");

/** A short digest of the server's and tool's names as written. */
const digest = (server: string, tool: string): string =>
  createHash("sha256")
    .update(`${server}\u0000${tool}`)
    .digest("hex")
    .slice(0, SUFFIX - 1);

/**
 * The Conclave name of MCP tool `tool` of server `server`:
 * `mcp_<server>_<tool>`, the server's name lowercased with `-` made `_`.
 * When the tool's own name is not already such a word (capitals, `-`, `.`…)
 * or the whole is longer than 64 characters, the sanitized name is cut to fit
 * and a hash of both names is added (`mcp_weather_get_weather_v2_1a2b3c4d`),
 * so two tools a plain sanitizing would merge (`getWeather`, `get_weather`) stay apart.
 */
export function mcpToolName(server: string, tool: string): string {
  const plain = `mcp_${sanitize(server)}_${tool}`;
  if (plain.length <= MAX_NAME && ToolName.safeParse(plain).success) return plain;
  const cut = `mcp_${sanitize(server)}_${sanitize(tool)}`.slice(0, MAX_NAME - SUFFIX).replace(/_+$/, "");
  return `${cut}_${digest(server, tool)}`;
}

/** An `mcp://` uri that does not name a server and a tool. */
export class McpUriError extends ConclaveError<"config"> {
  constructor(message: string) {
    super("config", message);
  }
}

/** The scheme of a uri binding a recipe's tool definition to an MCP server's tool. */
export const MCP_URI_SCHEME = "mcp:";

/** True when `uri` is meant as an MCP tool (`mcp://…`), well formed or not. */
export function isMcpUri(uri: string): boolean {
  return uri.toLowerCase().startsWith("mcp://");
}

/**
 * The server and tool of `mcp://<server>/<tool>` (the tool's name
 * percent-encoded where it holds `/`, `?`, `#`, `%` or spaces). A McpUriError
 * for anything else.
 */
export function parseMcpUri(uri: string): { server: string; tool: string } {
  const match = /^mcp:\/\/([^/?#]+)\/([^?#]+)$/i.exec(uri);
  if (!match) throw new McpUriError(`'${uri}' is not an MCP tool uri: write mcp://<server>/<tool>`);
  try {
    return { server: decodeURIComponent(match[1]!), tool: decodeURIComponent(match[2]!) };
  } catch {
    throw new McpUriError(`'${uri}' has a broken percent-encoding`);
  }
}

/** The Conclave tool name an `mcp://<server>/<tool>` uri binds to. */
export function toolNameOfMcpUri(uri: string): string {
  const { server, tool } = parseMcpUri(uri);
  return mcpToolName(server, tool);
}
