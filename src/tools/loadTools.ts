import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { importModule, isModuleSpecifier } from "../agents/loadAgents.ts";
import { messageOf } from "../errors.ts";
import { isToolDefinition, type ToolDefinition, ToolDefinitionError } from "./defineTool.ts";

/**
 * The tools a JavaScript (or, with tsx, TypeScript) module exports: its
 * default and named exports made with `defineTool`, or arrays of them.
 */
export async function loadToolModule(file: string): Promise<ToolDefinition[]> {
  let module: Record<string, unknown>;
  try {
    module = await importModule(pathToFileURL(resolve(file)).href);
  } catch (error) {
    const reason = messageOf(error).split("\n")[0];
    throw new ToolDefinitionError(`cannot load tools from ${file}: ${reason}`);
  }
  const found: ToolDefinition[] = [];
  for (const value of Object.values(module)) {
    for (const item of Array.isArray(value) ? value : [value]) {
      if (isToolDefinition(item) && !found.includes(item)) found.push(item);
    }
  }
  if (found.length === 0)
    throw new ToolDefinitionError(
      `${file} exports no tool: export tools made with defineTool (as the default export, named exports, or an array)`,
    );
  return found;
}

/**
 * Resolves `conclave worker --tools`: comma-separated items, each `builtin`
 * (the shipped tools of `src/tools/builtins/`: disk_usage, process_list, sandbox_write)
 * or a module path (`./my-tools.js`) whose tools are loaded.
 */
export async function resolveTools(spec: string): Promise<ToolDefinition[]> {
  const tools: ToolDefinition[] = [];
  for (const item of spec
    .split(",")
    .map((part) => part.trim())
    .filter(Boolean)) {
    if (item === "builtin") tools.push(...(await import("./builtins/index.ts")).TOOLS);
    else if (isModuleSpecifier(item)) tools.push(...(await loadToolModule(item)));
    else throw new ToolDefinitionError(`--tools takes 'builtin' or module paths (./my-tools.js), not '${item}'`);
  }
  return tools;
}
