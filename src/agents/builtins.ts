import { AGENTS } from "../../agents/index.ts";
import { ConclaveError } from "../errors.ts";
import type { AgentDefinition } from "./defineAgent.ts";

/** Raised when a worker is asked for agents or services that do not exist. */
export class UnknownAgentError extends ConclaveError<"unknown_agent"> {
  constructor(message: string) {
    super("unknown_agent", message);
  }
}

/**
 * Built-in agents by pattern: `*` matches any run of characters; patterns are
 * comma-separated (`emotion.*,inhibition.censor`).
 */
export function matchAgents(patterns: string, roster: Iterable<string> = AGENTS.keys()): string[] {
  const ids = [...roster];
  const matched = new Set<string>();
  for (const pattern of patterns
    .split(",")
    .map((part) => part.trim())
    .filter(Boolean)) {
    const regex = new RegExp(`^${pattern.replace(/[.+?^${}()|[\]\\]/g, "\\$&").replace(/\*/g, ".*")}$`);
    const hits = ids.filter((id) => regex.test(id));
    if (hits.length === 0)
      throw new UnknownAgentError(`no agent matches '${pattern}'; the roster is: ${ids.join(", ")}`);
    for (const id of hits) matched.add(id);
  }
  return [...matched];
}

/**
 * The built-in agents (the fourteen of `agents/`) whose ids match the
 * comma-separated patterns, `*` matching any run of characters: `"*"` (the
 * default), `"emotion.*"`, `"inhibition.censor,monitoring.*"`. Throws
 * UnknownAgentError for a pattern that matches none.
 */
export function builtinAgents(patterns = "*"): AgentDefinition[] {
  return matchAgents(patterns).map((id) => AGENTS.get(id)!);
}
