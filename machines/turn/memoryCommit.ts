import { assign } from "xstate";
import { usageSummary } from "../../src/contracts/turnProtocol.ts";
import { mergeUsage, outcomeOf } from "./context.ts";
import { turnSetup } from "./setup.ts";
import { failed, overran } from "./warnings.ts";

/** The memory commit stage, then the final state, which records TURN_COMPLETED. */

export const memoryCommit = turnSetup.createStateConfig({
  entry: { type: "enterStage", params: { stage: "memory_commit" } },
  invoke: {
    src: "commitMemory",
    input: ({ context }) => ({
      episode: {
        session_id: context.session_id,
        turn_id: context.turn_id,
        user_text: context.text,
        response: context.response,
        intent: context.decision?.speech_act.intent ?? "none",
        ts: 0,
      },
    }),
    onDone: {
      target: "completed",
      actions: [
        // Memory's model calls (fact extraction, embeddings) count in the turn's cost and its budget.
        assign({ usage: ({ context, event }) => mergeUsage(context.usage, event.output.usage ?? {}) }),
        {
          type: "record",
          params: ({ event }) => ({
            kind: "MEMORY_COMMITTED",
            payload: {
              summary: event.output.summary,
              stored: event.output.stored,
              ...(event.output.warnings?.length ? { warnings: event.output.warnings } : {}),
              ...(event.output.usage ? { usage: event.output.usage } : {}),
              ...(event.output.insights?.length ? { insights: event.output.insights } : {}),
            },
          }),
        },
        // A phase of the commit that failed (fact extraction, persona evolution…) makes the turn PartialSuccess.
        { type: "memoryWarnings", params: ({ event }) => event.output.warnings ?? [] },
      ],
    },
    onError: {
      target: "completed",
      actions: failed("memory_commit", "memory"),
    },
  },
  after: {
    stageTimeout: {
      target: "completed",
      actions: overran("memory_commit", "memory commit", "memory"),
    },
  },
});

export const completed = turnSetup.createStateConfig({
  type: "final",
  entry: {
    type: "record",
    params: ({ context }) => ({
      kind: "TURN_COMPLETED",
      payload: {
        response: context.response,
        usage: usageSummary(context.usage),
        outcome: outcomeOf(context),
      },
    }),
  },
});
