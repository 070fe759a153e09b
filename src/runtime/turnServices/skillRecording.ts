import type { TurnRecord } from "../../contracts/turnProtocol.ts";
import { messageOf, singleLine } from "../../errors.ts";
import type { LedgerStore } from "../../ledgers/ledgerStore.ts";
import { skillRecords } from "../../skills/skillRecords.ts";
import type { Logger } from "../../telemetry/log.ts";
import type { TurnInterceptor } from "./turnInterceptor.ts";

/** Where an accepted completion of a skill activated for the session ends that activation. */
export interface SessionSkillEnds {
  ledgers: Pick<LedgerStore, "write">;
  log: Pick<Logger, "warn">;
}

/**
 * The interceptor whose agent replies' skill activations and completions are
 * recorded on the turn's log (SKILL_ACTIVATED, SKILL_COMPLETED) as each reply
 * arrives, before its AGENT_COMPLETED (or, in a recipe run, its node's
 * NODE_COMPLETED, the node named) (src/skills/skillRecords.ts). With `ends`, an
 * accepted completion of a skill the call was given as active (`active_skills`)
 * also ends the session's activation of it (SESSION_SKILL_DEACTIVATED, reason
 * `completed`, by the agent; nothing when it was not activated for the session),
 * before the reply goes on: the session's next turn no longer gives it.
 */
export function skillRecordsInterceptor(
  record: (turn: { session_id: string; turn_id: number }, body: TurnRecord) => void,
  ends?: SessionSkillEnds,
): TurnInterceptor {
  return {
    callAgent: async (input, next) => {
      const reply = await next(input);
      const { request } = input;
      // Most replies report no skill work: nothing to build for them.
      if (reply.skills_activated || reply.skills_completed)
        for (const body of skillRecords(reply, request.recipe?.node)) record(request, body);
      const active = request.active_skills;
      if (ends && active && reply.skills_completed)
        for (const completion of reply.skills_completed) {
          if (!completion.ok || !active.includes(completion.skill)) continue;
          await ends.ledgers
            .write(
              { session_id: request.session_id, op: "skills.completed", skill: completion.skill },
              `agent:${reply.agent_id}`,
            )
            .catch((error: unknown) =>
              ends.log.warn(
                `session ${request.session_id}: skill ${completion.skill} completed, its activation not ended: ${singleLine(messageOf(error))}`,
              ),
            );
        }
      return reply;
    },
  };
}
