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
  const found = toolsOf(await importToolModule(file));
  if (found.length === 0)
    throw new ToolDefinitionError(
      `${file} exports no tool: export tools made with defineTool (as the default export, named exports, or an array)`,
    );
  return found;
}

async function importToolModule(file: string): Promise<Record<string, unknown>> {
  try {
    return await importModule(pathToFileURL(resolve(file)).href);
  } catch (error) {
    const reason = messageOf(error).split("\n")[0];
    throw new ToolDefinitionError(`cannot load tools from ${file}: ${reason}`);
  }
}

/** The tools among a module's exports (default, named, arrays), each once. */
function toolsOf(module: Record<string, unknown>): ToolDefinition[] {
  const found: ToolDefinition[] = [];
  for (const value of Object.values(module)) {
    for (const item of Array.isArray(value) ? value : [value]) {
      if (isToolDefinition(item) && !found.includes(item)) found.push(item);
    }
  }
  return found;
}

/**
 * The tools exported (made with `defineTool`) by the agent modules of a `--agents` list, hosted
 * with their agents; none is no error. Built-in patterns in the list have none. The modules are
 * the ones `resolveAgents` imported (Node's cache): the same definitions, not copies.
 */
export async function agentModuleTools(spec: string): Promise<ToolDefinition[]> {
  const tools: ToolDefinition[] = [];
  for (const file of spec
    .split(",")
    .map((item) => item.trim())
    .filter(isModuleSpecifier))
    tools.push(...toolsOf(await importToolModule(file)));
  return tools;
}

/**
 * The tools of `--agents` modules and of `--tools`, each definition once; two different tools of
 * one name are a ToolDefinitionError naming it.
 */
export function mergeTools(...lists: ToolDefinition[][]): ToolDefinition[] {
  const byName = new Map<string, ToolDefinition>();
  for (const tool of lists.flat()) {
    const same = byName.get(tool.manifest.name);
    if (same && same !== tool)
      throw new ToolDefinitionError(`two different tools are named '${tool.manifest.name}': rename one`);
    byName.set(tool.manifest.name, tool);
  }
  return [...byName.values()];
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
