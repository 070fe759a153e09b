import type { TurnRecord } from "../../contracts/turnProtocol.ts";
import { skillRecords } from "../../skills/skillRecords.ts";
import type { TurnInterceptor } from "./turnInterceptor.ts";

/**
 * The interceptor whose agent replies' skill activations and completions are
 * recorded on the turn's log (SKILL_ACTIVATED, SKILL_COMPLETED) as each reply
 * arrives, before its AGENT_COMPLETED (or, in a recipe run, its node's
 * NODE_COMPLETED, the node named) (src/skills/skillRecords.ts).
 */
export function skillRecordsInterceptor(
  record: (turn: { session_id: string; turn_id: number }, body: TurnRecord) => void,
): TurnInterceptor {
  return {
    callAgent: async (input, next) => {
      const reply = await next(input);
      const { request } = input;
      // Most replies report no skill work: nothing to build for them.
      if (reply.skills_activated || reply.skills_completed)
        for (const body of skillRecords(reply, request.recipe?.node)) record(request, body);
      return reply;
    },
  };
}
