import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import type { ToolCallRequest } from "../../../src/contracts/tool.ts";

/** The filesystem MCP server of the MCP project (a devDependency), run by this Node. */
export const FILESYSTEM_SERVER = join(
  dirname(createRequire(import.meta.url).resolve("@modelcontextprotocol/server-filesystem/package.json")),
  "dist/index.js",
);

/** A live call request of `tool` with `args`, as a runner sends it. */
export function callOf(tool: string, args: unknown): ToolCallRequest {
  return {
    session_id: "s",
    turn_id: 1,
    call_id: "c1",
    idempotency_key: "c1",
    tool,
    args,
    mode: "live",
    timeout_ms: 30_000,
  };
}
