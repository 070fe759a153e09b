import { type AgentContext, AgentManifest, type AgentOutput } from "../contracts/agent.ts";

/**
 * An agent: its manifest, the prompt an LLM answers it with, and the
 * deterministic rule path the offline model uses. One per file in `agents/`.
 */
export interface AgentDefinition {
  manifest: AgentManifest;
  /** System prompt for LLM mode; the model must answer with an `AgentOutput`. */
  prompt: string;
  /** Offline model: a pure function of the workspace snapshot. */
  rules: (context: AgentContext) => AgentOutput;
}

/** Validates the manifest once, at load time, so a bad agent file fails loudly and early. */
export function defineAgent(definition: AgentDefinition): AgentDefinition {
  return { ...definition, manifest: AgentManifest.parse(definition.manifest) };
}

/** An output with nothing to say: the starting point of most rule paths. */
export const quietOutput = (): AgentOutput => ({
  claims: [],
  supports: [],
  opposes: [],
  proposals: [],
  stance_delta: {},
});
