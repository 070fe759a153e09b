import { type AgentContext, AgentManifest, AgentOutput, type AgentRequest } from "../contracts/agent.ts";
import type { Claim } from "../contracts/workspace.ts";

/**
 * An agent: its manifest, the prompt an LLM answers it with, and the
 * deterministic rule path the offline model uses. One per file in `agents/`.
 */
export interface AgentDefinition {
  manifest: AgentManifest;
  /** What the agent is for, as instructions to a model (LLM mode). */
  prompt: string;
  /** The shape its answers must have; every agent answers with an AgentOutput. */
  output: typeof AgentOutput;
  /** Offline model, first say in a wave: a pure function of the workspace snapshot. */
  rules: (context: AgentContext) => AgentOutput;
  /** Offline model, deliberation round: reconsider contested claims. Default: reviseByMajority. */
  revise?: (context: AgentContext, agentId: string) => AgentOutput;
}

type AgentSpec = Omit<AgentDefinition, "output" | "manifest"> & {
  manifest: AgentManifest;
  output?: typeof AgentOutput;
};

/** Validates the manifest once, at load time, so a bad agent file fails loudly and early. */
export function defineAgent(definition: AgentSpec): AgentDefinition {
  return {
    ...definition,
    output: definition.output ?? AgentOutput,
    manifest: AgentManifest.parse(definition.manifest),
  };
}

/** An output with nothing to say: the starting point of most rule paths. */
export const quietOutput = (): AgentOutput => ({
  claims: [],
  supports: [],
  opposes: [],
  withdraws: [],
  concedes: [],
  proposals: [],
  stance_delta: {},
});

/**
 * The default way an agent reconsiders in a deliberation round: it takes back
 * its own claims that more agents oppose than support, and stops opposing
 * claims that at least twice as many agents support.
 */
export function reviseByMajority(context: AgentContext, agentId: string): AgentOutput {
  const output = quietOutput();
  for (const claim of context.claims) {
    if (claim.source === agentId && claim.opposition.length > claim.support.length) output.withdraws.push(claim.id);
    if (claim.opposition.includes(agentId) && claim.support.length >= 2 * claim.opposition.length)
      output.concedes.push(claim.id);
  }
  return output;
}

/** The answer an agent's offline model gives to a request, in either mode. */
export function answerOffline(agent: AgentDefinition, request: Pick<AgentRequest, "mode" | "context">): AgentOutput {
  return request.mode === "revise"
    ? (agent.revise ?? reviseByMajority)(request.context, agent.manifest.id)
    : agent.rules(request.context);
}

export const hasClaim = (claims: readonly Claim[], id: string): boolean => claims.some((claim) => claim.id === id);
