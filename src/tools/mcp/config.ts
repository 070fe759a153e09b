/**
 * The `mcpServers` JSON file `conclave worker --mcp` reads: the format MCP
 * clients share (Claude Desktop, Cursor, VS Code…), each server started as a
 * child process over stdio (`command`, `args`, `env`, `cwd`) or reached over
 * Streamable HTTP (`url`, `headers`). Fields other clients add (`disabled`,
 * `autoApprove`, `timeout`…) are allowed; `disabled: true` leaves a server out.
 */
import { readFile } from "node:fs/promises";
import { z } from "zod";
import { registerSecretEntries } from "../../config/secrets.ts";
import { describeIssues } from "../../contracts/issues.ts";
import { ConclaveError, messageOf } from "../../errors.ts";

/** A `--mcp` file (or an `mcpServers` object) that cannot be used: the message says where and why. */
export class McpConfigError extends ConclaveError<"config"> {
  constructor(message: string) {
    super("config", message);
  }
}

/** A server Conclave starts and talks to over its stdin and stdout. */
export const McpStdioServer = z.looseObject({
  type: z.literal("stdio").optional(),
  command: z.string().min(1),
  args: z.array(z.string()).default([]),
  /** Added to the few variables the SDK passes on by default (PATH, HOME…): the worker's secrets are not. */
  env: z.record(z.string(), z.string()).default({}),
  cwd: z.string().min(1).optional(),
  disabled: z.boolean().optional(),
});
export type McpStdioServer = z.infer<typeof McpStdioServer>;

/** A server reached over Streamable HTTP at `url`. */
export const McpHttpServer = z.looseObject({
  type: z.enum(["http", "streamable-http", "streamableHttp"]).optional(),
  url: z.url({ protocol: /^https?$/ }),
  /** Sent with every request (an `Authorization` header, say). */
  headers: z.record(z.string(), z.string()).default({}),
  disabled: z.boolean().optional(),
});
export type McpHttpServer = z.infer<typeof McpHttpServer>;

/** One entry of `mcpServers`: stdio when it has a `command`, HTTP when it has a `url`. */
export type McpServerConfig = McpStdioServer | McpHttpServer;

/**
 * A server's name as the `mcpServers` key writes it: mapped tool names and
 * `mcp://<server>/<tool>` uris carry it, so it is a word, not any string.
 */
export const McpServerName = z
  .string()
  .regex(/^[A-Za-z][A-Za-z0-9_-]{0,31}$/, "a server name is a word of letters, digits, '_' and '-' (at most 32)");

/** True for a stdio server's entry. */
export function isStdioServer(server: McpServerConfig): server is McpStdioServer {
  return "command" in server;
}

/**
 * The servers of an `mcpServers` document (disabled ones left out), by name;
 * a McpConfigError naming the first problem's path otherwise.
 */
export function parseMcpConfig(document: unknown, source = "the MCP configuration"): Map<string, McpServerConfig> {
  const top = z.looseObject({ mcpServers: z.record(z.string(), z.unknown()) }).safeParse(document);
  if (!top.success) throw new McpConfigError(`${source}: expected {"mcpServers": {"<name>": {...}}}`);
  const servers = new Map<string, McpServerConfig>();
  const lowered = new Map<string, string>();
  for (const [name, entry] of Object.entries(top.data.mcpServers)) {
    const at = `${source}: mcpServers.${name}`;
    const named = McpServerName.safeParse(name);
    if (!named.success) throw new McpConfigError(`${at}: ${named.error.issues[0]?.message}`);
    // Mapped names are lowercase with `-` made `_`: two servers differing only there would serve the same names.
    const key = name.toLowerCase().replace(/-/g, "_");
    const twin = lowered.get(key);
    if (twin) throw new McpConfigError(`${at}: its name differs from '${twin}' only by case or '-' for '_'`);
    lowered.set(key, name);
    const kind = serverKind(entry);
    if (kind === "sse")
      throw new McpConfigError(`${at}: "type": "sse" is not supported; give the server's Streamable HTTP endpoint`);
    if (kind === null)
      throw new McpConfigError(`${at}: give "command" (a server started over stdio) or "url" (Streamable HTTP)`);
    const parsed = kind.safeParse(entry);
    if (!parsed.success) throw new McpConfigError(`${at}: ${describeIssues(parsed.error, { limit: 1, join: "; " })}`);
    if (parsed.data.disabled) continue;
    // Its credentials are scrubbed from every error from now on (config/secrets.ts).
    const server = parsed.data as McpServerConfig;
    registerSecretEntries(isStdioServer(server) ? server.env : server.headers);
    servers.set(name, parsed.data);
  }
  return servers;
}

/** Which shape an entry is meant to have (an SSE-only server is refused: its transport is deprecated). */
function serverKind(entry: unknown): typeof McpStdioServer | typeof McpHttpServer | "sse" | null {
  if (typeof entry !== "object" || entry === null) return null;
  const record = entry as Record<string, unknown>;
  if (record.type === "sse") return "sse";
  if ("command" in record) return McpStdioServer;
  if ("url" in record) return McpHttpServer;
  return null;
}

/** Reads and checks a `--mcp` file (JSON in the `mcpServers` format). */
export async function loadMcpConfigFile(file: string): Promise<Map<string, McpServerConfig>> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (error) {
    throw new McpConfigError(`cannot read ${file}: ${messageOf(error)}`);
  }
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch (error) {
    throw new McpConfigError(`${file} is not JSON: ${messageOf(error)}`);
  }
  const servers = parseMcpConfig(document, file);
  if (servers.size === 0) throw new McpConfigError(`${file} lists no MCP server (or only disabled ones)`);
  return servers;
}
