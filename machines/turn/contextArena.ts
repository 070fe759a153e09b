import { enqueueActions } from "xstate";
import { DEFAULT_ARENA_POLICY, planTurnContext } from "../../src/context/arena.ts";
import type { TurnEvent, TurnRecord } from "../../src/contracts/turnProtocol.ts";
import { agentContext, type PlannedMemory, type TurnContext } from "./context.ts";

/**
 * The context arena in the turn (docs/context.md): entering the agents stage,
 * the agents' context is planned against the session's budget, the older
 * turns compacted first when the pressure calls for it. Pure CPU, no request.
 */

type RecordAction = { type: "record"; params: TurnRecord };

/** The memory part of a planned agent context. */
const memoryOf = (context: PlannedMemory): PlannedMemory => {
  const { episodes, user_facts, open_threads, procedures, persona, ledgers, summary, tool_failures, supplemental } =
    context;
  return {
    episodes,
    ...(user_facts ? { user_facts } : {}),
    ...(open_threads ? { open_threads } : {}),
    ...(procedures ? { procedures } : {}),
    ...(persona ? { persona } : {}),
    ...(ledgers ? { ledgers } : {}),
    ...(summary ? { summary } : {}),
    ...(tool_failures ? { tool_failures } : {}),
    ...(supplemental ? { supplemental } : {}),
  };
};

export const arenaActions = {
  /**
   * Plans what the agents are told; records CONTEXT_COMPACTED (when compaction ran), CONTEXT_PLANNED and
   * CONTEXT_ZONES_ADAPTED (when the session's zone caps moved).
   */
  planContext: enqueueActions<TurnContext, TurnEvent, undefined, TurnEvent, never, RecordAction, never>(
    ({ context, enqueue }) => {
      const planned = planTurnContext(
        context.context_arena,
        agentContext({ ...context, planned_memory: null }),
        context.policy.context ?? DEFAULT_ARENA_POLICY,
        {
          turn_id: context.turn_id,
          conversation: context.conversation,
          request: context.compaction_request,
          supplements: context.supplements,
          summarised: context.summarised,
        },
      );
      // The conversation read for the compaction has served: the turn keeps no copy of it.
      enqueue.assign({
        context_arena: planned.state,
        planned_memory: memoryOf(planned.context),
        conversation: [],
        summarised: null,
        supplements: [],
      });
      if (planned.compacted)
        enqueue({ type: "record", params: { kind: "CONTEXT_COMPACTED", payload: planned.compacted } });
      enqueue({ type: "record", params: { kind: "CONTEXT_PLANNED", payload: planned.planned } });
      if (planned.adapted)
        enqueue({ type: "record", params: { kind: "CONTEXT_ZONES_ADAPTED", payload: planned.adapted } });
    },
  ),
};
