import { ToolName, type ToolRisk } from "../contracts/tool.ts";
import { messageOf } from "../errors.ts";
import { isMcpUri, toolNameOfMcpUri } from "../tools/mcp/names.ts";
import type { WorkflowRecipeDocument } from "./schema.ts";

type Definitions = WorkflowRecipeDocument["definitions"];

/**
 * The Conclave tool a workflow tool definition names: with a `uri` of the form
 * `mcp://<server>/<tool>`, that MCP server's tool as a worker given the server
 * (`--mcp`) serves it (see mcpToolName); else its `name` when that is a tool
 * name, else its `id`.
 */
export function toolNameOf(definition: { name: string; id: string; uri?: string | undefined }): string | undefined {
  if (definition.uri !== undefined && isMcpUri(definition.uri)) return mcpToolNameOf(definition.uri).name;
  return [definition.name, definition.id].find((candidate) => ToolName.safeParse(candidate).success);
}

/** The Conclave name an `mcp://` uri binds to, or why it binds to none. */
function mcpToolNameOf(uri: string): { name?: string; problem?: string } {
  try {
    return { name: toolNameOfMcpUri(uri) };
  } catch (error) {
    return { problem: messageOf(error) };
  }
}

/**
 * The tools a workflow agent definition lists (tool definition ids), as
 * Conclave tool names; a reference that is no tool definition, or one that
 * names no Conclave tool, is an issue at its path.
 */
export function agentToolsOf(
  definitions: Definitions,
  name: string,
  usedBy: string,
  issue: (path: string, message: string) => void,
): { tools?: string[] } {
  const definition = definitions[name];
  if (definition?.type !== "agent" || !definition.tools?.length) return {};
  const tools: string[] = [];
  for (const [index, ref] of definition.tools.entries()) {
    const tool = definitions[ref];
    const toolName = tool?.type === "tool" ? toolNameOf(tool) : undefined;
    if (tool?.type !== "tool")
      issue(`definitions.${name}.tools.${index}`, `'${ref}' is not a tool definition (used by ${usedBy})`);
    else if (toolName) tools.push(toolName);
    else if (tool.uri !== undefined && isMcpUri(tool.uri))
      issue(`definitions.${ref}.uri`, mcpToolNameOf(tool.uri).problem ?? "not an MCP tool uri");
    else
      issue(
        `definitions.${ref}.name`,
        `neither '${tool.name}' nor '${tool.id}' is a Conclave tool name (a lowercase word of a-z, 0-9 and '_')`,
      );
  }
  return { tools };
}

/** The risk a workflow's tool definitions declare, by tool name (the stricter of it and the tool's own applies). */
export function toolRisksOf(definitions: Definitions): { tool_risks?: Record<string, ToolRisk> } {
  const risks: Record<string, ToolRisk> = {};
  for (const definition of Object.values(definitions)) {
    const name = definition.type === "tool" ? toolNameOf(definition) : undefined;
    if (name && definition.type === "tool" && definition.risk_level) risks[name] = definition.risk_level;
  }
  return Object.keys(risks).length > 0 ? { tool_risks: risks } : {};
}
