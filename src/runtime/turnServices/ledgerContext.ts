import { turnLabel } from "../../contracts/turnKey.ts";
import { messageOf, singleLine } from "../../errors.ts";
import type { LedgerStore } from "../../ledgers/ledgerStore.ts";
import type { Logger } from "../../telemetry/log.ts";
import type { TurnInterceptor } from "./turnInterceptor.ts";

/**
 * The interceptor whose memory retrieval also brings the session's ledger
 * digest (truth facts, task spec, open items and blockers), read from the
 * ledgers' projection alongside the memory request, so it adds no wait of its
 * own. A digest that cannot be read is left out (and logged): the turn goes
 * on with its memory.
 */
export function ledgerDigestInterceptor(ledgers: Pick<LedgerStore, "forTurn">, log: Logger): TurnInterceptor {
  return {
    retrieveMemory: async (input, next) => {
      const { request } = input;
      // The memory request first, then the ledgers' read: both out before either answers (one round trip).
      const memory = next(input);
      const read = ledgers.forTurn(request.session_id).catch((error: unknown) => {
        log.warn(
          `${turnLabel(request.session_id, request.turn_id)}: ledgers left out of its context: ${singleLine(messageOf(error))}`,
        );
        return { digest: null, compaction: null, skills: [], supplements: [] };
      });
      const [retrieved, { digest, compaction, skills, supplements }] = await Promise.all([memory, read]);
      return {
        ...retrieved,
        ...(digest ? { ledgers: digest } : {}),
        // The session's compaction request, from the same read: the turn compacts when its arena has not consumed it.
        ...(compaction ? { compaction_request: compaction } : {}),
        // The skills activated for the session, from the same read: the turn gives them to every agent it asks.
        ...(skills.length > 0 ? { active_skills: skills } : {}),
        // Its supplements, from the same read: the turn's arena takes those it has not consumed.
        ...(supplements.length > 0 ? { supplements } : {}),
      };
    },
  };
}
