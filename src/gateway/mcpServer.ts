/**
 * The gateway's MCP server: lists the tools and calls them, one MCP server
 * per client connection (a Streamable HTTP session, or stdio). A call's
 * events go out as `notifications/progress` when the client sent a
 * progressToken, and the client's `notifications/cancelled` aborts the
 * request's signal, which cancels the turn or run.
 *
 * The SDK's low-level `Server` is used rather than `McpServer`: a recipe's
 * arguments are a JSON Schema given by its file, which `McpServer` (zod
 * schemas) cannot take as it is.
 */
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { ErrorCode, ListToolsRequestSchema, McpError } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { describeIssues } from "../contracts/issues.ts";
import { MAX_PROGRESS_TOKEN_LENGTH } from "./limits.ts";
import type { GatewayClients, Principal } from "./principals.ts";
import { type ProgressReporter, progressReporter, SILENT } from "./progress.ts";
import { callTool, type GatewayTool } from "./tools.ts";

/** What every MCP server of the gateway serves. */
export interface McpServerOptions {
  /** The client each principal talks through (principals.ts). */
  clients: GatewayClients;
  /** Whose session this server serves: its calls act as this principal. */
  principal: Principal;
  tools: readonly GatewayTool[];
  /** Conclave's version, told to clients in `initialize`. */
  version: string;
  /** A notification that could not be sent (the client went away). */
  onError?: (error: unknown) => void;
}

const INSTRUCTIONS =
  "Conclave is a multi-agent runtime. `converse` says one thing in a conversation and returns the reply " +
  "(pass the session_id it returns to go on with the same conversation); each other tool runs a recipe (a workflow). " +
  "A run that waits for a person (a human node or an approval) is returned as suspended, with the command that answers it.";

/** What a tools/call's params must be. */
const CallParams = z.looseObject({
  name: z.string().min(1, "must name a tool"),
  arguments: z.record(z.string(), z.unknown()).optional(),
  // The token is echoed in every progress notification: a long one would multiply the answer's size.
  _meta: z
    .looseObject({
      progressToken: z
        .union([
          z.string().max(MAX_PROGRESS_TOKEN_LENGTH, `must be at most ${MAX_PROGRESS_TOKEN_LENGTH} characters`),
          z.number(),
        ])
        .optional(),
    })
    .optional(),
});

/**
 * tools/call, checked here first: bad params are an InvalidParams error of one
 * line (the SDK's own check would answer a multi-line dump of its schema's issues).
 */
const CallToolRequest = z.object({
  method: z.literal("tools/call"),
  params: z.unknown().transform((params) => {
    const checked = CallParams.safeParse(params);
    if (!checked.success)
      throw new McpError(
        ErrorCode.InvalidParams,
        `tools/call: ${describeIssues(checked.error, { join: "; ", root: "params" })}`,
      );
    return checked.data;
  }),
});

/** A new MCP server for one client connection. */
export function createMcpServer(options: McpServerOptions): Server {
  const server = new Server(
    { name: "conclave", version: options.version },
    { capabilities: { tools: { listChanged: false } }, instructions: INSTRUCTIONS },
  );
  const byName = new Map(options.tools.map((tool) => [tool.name, tool]));
  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: options.tools.map(({ name, description, inputSchema, outputSchema }) => ({
      name,
      description,
      inputSchema,
      ...(outputSchema ? { outputSchema } : {}),
    })),
  }));
  server.setRequestHandler(CallToolRequest, async (request, extra) => {
    const tool = byName.get(request.params.name);
    if (!tool)
      throw new McpError(
        ErrorCode.InvalidParams,
        `unknown tool '${request.params.name}'; the tools are: ${[...byName.keys()].join(", ")}`,
      );
    const token = extra._meta?.progressToken;
    const progress: ProgressReporter =
      token === undefined
        ? SILENT
        : progressReporter((update) => {
            if (extra.signal.aborted) return;
            extra
              .sendNotification({ method: "notifications/progress", params: { progressToken: token, ...update } })
              .catch((error: unknown) => options.onError?.(error));
          });
    const args = request.params.arguments ?? {};
    const client = await options.clients.for(options.principal);
    return callTool(tool, client, args, { signal: extra.signal, progress, principal: options.principal });
  });
  return server;
}
