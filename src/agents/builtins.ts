import { AGENTS } from "../../agents/index.ts";
import { matchAgents } from "../workers/startWorker.ts";
import type { AgentDefinition } from "./defineAgent.ts";

/**
 * The built-in agents (the fourteen of `agents/`) whose ids match the
 * comma-separated patterns, `*` matching any run of characters: `"*"` (the
 * default), `"emotion.*"`, `"inhibition.censor,monitoring.*"`. Throws
 * UnknownAgentError for a pattern that matches none.
 */
export function builtinAgents(patterns = "*"): AgentDefinition[] {
  return matchAgents(patterns).map((id) => AGENTS.get(id)!);
}
