import { assign, enqueueActions } from "xstate";
import { DEFAULT_ARENA_POLICY } from "../../src/context/arena.ts";
import { mayCompact } from "../../src/context/compactionRead.ts";
import { retrievedRefs, unresolvedMemoryWarning } from "../../src/contracts/memory.ts";
import { COMPACTION_ACTOR } from "../../src/contracts/usage.ts";
import { agentContext, mergeUsage } from "./context.ts";
import { turnSetup } from "./setup.ts";
import { failed, overran } from "./warnings.ts";

/** The context stage: memory retrieval for the turn. */

export const contextState = turnSetup.createStateConfig({
  entry: { type: "enterStage", params: { stage: "context" } },
  invoke: {
    src: "retrieveMemory",
    input: ({ context }) => ({
      session_id: context.session_id,
      turn_id: context.turn_id,
      user_message: context.text,
      limit: 3,
      // Whether the turn will compact is known once memory answered: then the conversation is read too.
      ...(mayCompact(context.context_arena, context.policy.context, context.turn_id)
        ? {
            compaction: {
              arena: context.context_arena,
              context: agentContext({ ...context, planned_memory: null }),
              policy: context.policy.context ?? DEFAULT_ARENA_POLICY,
              // Memory's model writes the summary within half the stage's deadline, else the turn compacts offline.
              summary_deadline_ms: Math.max(1, Math.floor(context.policy.stage_timeout_ms / 2)),
            },
          }
        : {}),
    }),
    onDone: {
      target: "agents",
      actions: [
        assign({
          episodes: ({ event }) => event.output.episodes,
          conversation: ({ event }) => event.output.conversation ?? [],
          summarised: ({ event }) => event.output.summarised ?? null,
          user_facts: ({ event }) => event.output.user_facts,
          open_threads: ({ event }) => event.output.open_threads,
          procedures: ({ event }) => event.output.procedures ?? [],
          persona: ({ event }) => event.output.persona ?? null,
          ledgers: ({ event }) => event.output.ledgers ?? null,
          compaction_request: ({ event }) => event.output.compaction_request ?? null,
          active_skills: ({ event }) => event.output.active_skills ?? [],
          supplements: ({ event }) => event.output.supplements ?? [],
          // Memory's model calls for the retrieval (its message's embedding) and for the summary (when it
          // wrote one) count in the turn's cost, spent whether or not the arena then uses the summary.
          usage: ({ context, event }) =>
            mergeUsage(context.usage, {
              ...event.output.usage,
              ...(event.output.summarised ? { [COMPACTION_ACTOR]: event.output.summarised.usage } : {}),
            }),
        }),
        {
          type: "record",
          // By reference: the log keeps no copy of older turns' text (it lives only where its source does).
          params: ({ event }) => ({
            kind: "MEMORY_RETRIEVED",
            payload: retrievedRefs(event.output),
          }),
        },
        {
          type: "record",
          params: ({ event }) => ({
            kind: "WORKSPACE_PATCHED",
            payload: {
              patch: {
                retrieved_episodes_count: event.output.episodes.length,
                user_facts_count: event.output.user_facts.length,
                open_threads_count: event.output.open_threads.length,
              },
            },
          }),
        },
        // A taken-over turn's recorded references read back: a source gone since (trimmed, expired, erased) is
        // left out of its context, and the log says so.
        enqueueActions(({ event, enqueue }) => {
          const gone = event.output.unresolved ?? 0;
          if (gone > 0) enqueue({ type: "warn", params: unresolvedMemoryWarning(gone) });
        }),
      ],
    },
    onError: {
      target: "agents",
      actions: failed("context", "memory"),
    },
  },
  after: {
    stageTimeout: {
      target: "agents",
      actions: overran("context", "memory retrieval", "memory"),
    },
  },
});
