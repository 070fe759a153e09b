/**
 * An MCP server's tool as a Conclave tool: the shape `defineTool` makes, so a
 * worker hosts it on `conclave.tool.<name>` like any other, its arguments
 * checked against the tool's own JSON Schema before the server is asked.
 */
import { z } from "zod";
import { type ToolEffect, ToolManifest, type ToolRisk } from "../../contracts/tool.ts";
import { messageOf } from "../../errors.ts";
import { fromRecipeJsonSchema } from "../../recipes/jsonSchema.ts";
import type { ToolDefinition, ToolRunContext } from "../defineTool.ts";
import { mcpToolName } from "./names.ts";

/** What an MCP server lists about one tool (`tools/list`), as far as Conclave reads it. */
export interface McpToolInfo {
  name: string;
  title?: string;
  description?: string;
  inputSchema: Record<string, unknown>;
  annotations?: {
    title?: string;
    readOnlyHint?: boolean;
    destructiveHint?: boolean;
    idempotentHint?: boolean;
    openWorldHint?: boolean;
  };
}

/** Calls the tool on its server by its own name; answers the Conclave result or throws a one-line error. */
export type McpCall = (tool: string, args: Record<string, unknown>, ctx: ToolRunContext) => Promise<unknown>;

/**
 * The risk and effect a tool's annotations give it: `readOnlyHint` → a `safe`
 * read; `destructiveHint` → a `critical` write (approval by default);
 * otherwise a `standard` write. (MCP takes an unannotated non-read-only tool
 * as destructive; Conclave gives it `standard` so that plain tools run
 * without approval; a policy or a recipe's `risk_level` can raise it.)
 */
export function riskOfAnnotations(annotations: McpToolInfo["annotations"]): { risk: ToolRisk; effect: ToolEffect } {
  if (annotations?.readOnlyHint === true) return { risk: "safe", effect: "read" };
  if (annotations?.destructiveHint === true) return { risk: "critical", effect: "write" };
  return { risk: "standard", effect: "write" };
}

/** Marks a tool definition as `defineTool` does (its brand is global, `Symbol.for`), so `isToolDefinition` knows it. */
export function brandTool(definition: ToolDefinition): ToolDefinition {
  Object.defineProperty(definition, Symbol.for("conclave.tool"), { value: true });
  return Object.freeze(definition);
}

/** Longest description a manifest carries. */
const MAX_DESCRIPTION = 1_000;

/**
 * The Conclave tool for `tool` of server `server`, named by `mcpToolName`.
 * Its input is checked against the tool's JSON Schema (converted as recipes'
 * schemas are, patterns by RE2); a schema that cannot be converted leaves
 * only "an object" checked here, and `onWarning` says so.
 */
export function mcpToolDefinition(
  server: string,
  tool: McpToolInfo,
  call: McpCall,
  onWarning: (message: string) => void = () => {},
): ToolDefinition {
  const name = mcpToolName(server, tool.name);
  const schema = { type: "object", ...tool.inputSchema };
  let input: z.ZodType;
  try {
    input = fromRecipeJsonSchema(schema);
  } catch (error) {
    onWarning(`MCP tool ${server}/${tool.name}: its input schema is not checked here (${messageOf(error)})`);
    input = z.record(z.string(), z.unknown());
  }
  const about = tool.description ?? tool.title ?? tool.annotations?.title ?? "";
  const description = `${about || `MCP tool ${tool.name}`} (MCP server ${server}, tool ${tool.name})`;
  const manifest = ToolManifest.parse({
    name,
    description:
      description.length <= MAX_DESCRIPTION ? description : `${description.slice(0, MAX_DESCRIPTION - 3)}...`,
    ...riskOfAnnotations(tool.annotations),
    input_schema: schema,
    dry_run: false,
    rollback: false,
  });
  const definition: ToolDefinition = {
    manifest,
    input,
    output: z.unknown(),
    run: (args, ctx) => call(tool.name, (args ?? {}) as Record<string, unknown>, ctx),
  };
  return brandTool(definition);
}
