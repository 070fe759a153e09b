import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { messageOf } from "../errors.ts";
import { builtinAgents } from "./builtins.ts";
import { type AgentDefinition, AgentDefinitionError, isAgentDefinition } from "./defineAgent.ts";

/** True when a `--agents` item names a module file rather than built-in agents. */
export const isModuleSpecifier = (item: string): boolean =>
  /^(\.{1,2}[\\/]|[\\/])/.test(item) || /\.(c|m)?(j|t)s$/.test(item);

/**
 * The agents a JavaScript module exports: its default export and named
 * exports that are agents made with `defineAgent`, or arrays of them.
 */
export async function loadAgentModule(file: string): Promise<AgentDefinition[]> {
  let module: Record<string, unknown>;
  try {
    module = await importModule(pathToFileURL(resolve(file)).href);
  } catch (error) {
    const reason = messageOf(error).split("\n")[0];
    throw new AgentDefinitionError(`cannot load agents from ${file}: ${reason}`);
  }
  const found: AgentDefinition[] = [];
  for (const value of Object.values(module)) {
    for (const item of Array.isArray(value) ? value : [value]) {
      if (isAgentDefinition(item) && !found.includes(item)) found.push(item);
    }
  }
  if (found.length === 0)
    throw new AgentDefinitionError(
      `${file} exports no agent: export agents made with defineAgent (as the default export, named exports, or an array)`,
    );
  return found;
}

/**
 * Imports a module; a TypeScript one that Node cannot load by itself (Node 20
 * has no type stripping) is loaded with tsx when it is installed, as it is in
 * a checkout of Conclave or a project that runs TypeScript with it.
 */
export async function importModule(url: string): Promise<Record<string, unknown>> {
  try {
    return (await import(url)) as Record<string, unknown>;
  } catch (error) {
    if ((error as { code?: unknown }).code !== "ERR_UNKNOWN_FILE_EXTENSION") throw error;
    let tsx: { tsImport: (specifier: string, parent: string) => Promise<unknown> };
    try {
      tsx = (await import("tsx/esm/api")) as typeof tsx;
    } catch {
      throw new Error(
        "a TypeScript module needs tsx to load (npm install --save-dev tsx), or compile it to JavaScript first",
      );
    }
    return (await tsx.tsImport(url, import.meta.url)) as Record<string, unknown>;
  }
}

/**
 * Resolves `conclave worker --agents`: comma-separated items, each either a
 * pattern over the built-in agents (`emotion.*`, `*`) or a module path
 * (`./my-agents.js`) whose agents are loaded.
 */
export async function resolveAgents(spec: string): Promise<AgentDefinition[]> {
  const items = spec
    .split(",")
    .map((item) => item.trim())
    .filter(Boolean);
  const patterns = items.filter((item) => !isModuleSpecifier(item));
  const agents = patterns.length > 0 ? builtinAgents(patterns.join(",")) : [];
  for (const file of items.filter(isModuleSpecifier)) agents.push(...(await loadAgentModule(file)));
  return agents;
}
