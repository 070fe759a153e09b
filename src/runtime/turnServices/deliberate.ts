import { computeConsensus, stakeholders } from "../../cognition/deliberation.ts";
import { applyAgentOutput } from "../../cognition/workspace.ts";
import type { AgentReply, AgentRequest } from "../../contracts/agent.ts";
import type { DeliberateInput, DeliberateOutput, Revision } from "../../contracts/turnProtocol.ts";
import type { Usage } from "../../contracts/usage.ts";

/**
 * One deliberation round. Round 0 measures the consensus the waves reached.
 * Each later round asks the agents with a stake in contested claims (their
 * authors and opponents) to revise, in parallel, merges what they change, and
 * measures again. An agent that fails to answer simply changes nothing.
 */
export async function deliberateRound(
  input: DeliberateInput,
  callAgent: (request: AgentRequest, signal: AbortSignal) => Promise<AgentReply>,
  signal: AbortSignal,
): Promise<DeliberateOutput> {
  if (input.round === 0) {
    return {
      workspace: input.workspace,
      consensus: computeConsensus(input.workspace.claims),
      revisions: [],
      usage: {},
    };
  }
  const agents = stakeholders(input.workspace.claims);
  const replies = await Promise.allSettled(
    agents.map((agentId) =>
      callAgent(
        {
          session_id: input.session_id,
          turn_id: input.turn_id,
          agent_id: agentId,
          wave: 0,
          mode: "revise",
          round: input.round,
          timeout_ms: input.timeout_ms,
          context: { ...input.context, claims: input.workspace.claims, stance: input.workspace.stance },
          ...(input.active_skills ? { active_skills: input.active_skills } : {}),
        },
        signal,
      ),
    ),
  );
  let workspace = input.workspace;
  const revisions: Revision[] = [];
  const usage: Record<string, Usage> = {};
  for (const result of replies) {
    if (result.status !== "fulfilled") continue;
    const { agent_id, contribution: output } = result.value;
    // Revisions are about claims: the stance moves only in the waves, where STANCE_UPDATED records it.
    workspace = applyAgentOutput(workspace, agent_id, { ...output, stance_delta: {} });
    revisions.push({ agent_id, withdrew: output.withdraws, conceded: output.concedes, opposed: output.opposes });
    if (result.value.usage) usage[`agent:${agent_id}`] = result.value.usage;
  }
  return { workspace, consensus: computeConsensus(workspace.claims), revisions, usage };
}
