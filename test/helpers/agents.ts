import type { AgentDefinition } from "../../src/agents/defineAgent.ts";
import { runAgent } from "../../src/agents/runAgent.ts";
import type { AgentContext, AgentRequest, Contribution } from "../../src/contracts/agent.ts";

/** An agent request around a context, as a wave (or a deliberation round) sends it. */
export const agentRequest = (
  agentId: string,
  context: AgentContext,
  mode: "respond" | "revise" = "respond",
  round = 0,
): AgentRequest => ({
  session_id: "s1",
  turn_id: 1,
  agent_id: agentId,
  wave: 0,
  mode,
  round,
  timeout_ms: 1_000,
  context,
});

/** What an agent contributes in the offline mode (no model), through the same code a worker runs. */
export async function offlineAnswer(
  agent: AgentDefinition,
  context: AgentContext,
  mode: "respond" | "revise" = "respond",
): Promise<Contribution> {
  const answer = await runAgent(agent, agentRequest(agent.manifest.id, context, mode, mode === "revise" ? 1 : 0), {
    signal: new AbortController().signal,
  });
  return answer.contribution;
}
