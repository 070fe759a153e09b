/**
 * What the runner records of an agent reply's skill lifecycle: one
 * SKILL_ACTIVATED per activation, then one SKILL_COMPLETED per completion
 * (with the output, or the issues of a refused one), in the agent's order.
 */
import type { AgentReply } from "../contracts/agent.ts";
import type { TurnRecord } from "../contracts/turnProtocol.ts";

/** The events to record for `reply`'s skills (empty: it reports none). */
export function skillRecords(reply: AgentReply, node?: string): TurnRecord[] {
  const ref = { agent_id: reply.agent_id, ...(node ? { node } : {}) };
  const records: TurnRecord[] = [];
  for (const skill of reply.skills_activated ?? [])
    records.push({ kind: "SKILL_ACTIVATED", payload: { skill, ...ref } });
  for (const done of reply.skills_completed ?? [])
    records.push({
      kind: "SKILL_COMPLETED",
      payload: done.ok
        ? { skill: done.skill, ...ref, ok: true, output: done.output }
        : { skill: done.skill, ...ref, ok: false, issues: done.issues ?? [] },
    });
  return records;
}
