/**
 * The tools shipped with Conclave, one per file: what `conclave worker
 * --tools builtin` hosts. Real and safe to host anywhere: two read-only
 * system probes (`disk_usage`, `process_list`, Linux /proc) and one write
 * confined to a sandbox directory (`sandbox_write`, dry-runnable and
 * undoable). Not a closed set: a worker hosts any tool made with
 * `defineTool`.
 *
 * @module
 */
import type { ToolDefinition } from "../defineTool.ts";
import { diskUsage } from "./disk_usage.ts";
import { processList } from "./process_list.ts";
import { sandboxWrite } from "./sandbox_write.ts";

export { diskUsage } from "./disk_usage.ts";
export { processList } from "./process_list.ts";
export { sandboxDir, sandboxWrite } from "./sandbox_write.ts";

/** The built-in tools, in the order a worker announces them. */
export const TOOLS: readonly ToolDefinition[] = [diskUsage, processList, sandboxWrite];
