import { assign } from "xstate";
import { agentContext, mergeUsage } from "./context.ts";
import { turnSetup } from "./setup.ts";
import { failed, overran } from "./warnings.ts";

/** The deliberation stage: rounds until consensus or the round limit. */

export const deliberation = turnSetup.createStateConfig({
  entry: { type: "enterStage", params: { stage: "deliberation" } },
  initial: "round",
  states: {
    round: {
      entry: {
        type: "record",
        params: ({ context }) => ({ kind: "DELIB_ROUND_STARTED", payload: { round: context.round } }),
      },
      invoke: {
        src: "deliberate",
        input: ({ context }) => ({
          round: context.round,
          workspace: context.workspace,
          session_id: context.session_id,
          turn_id: context.turn_id,
          timeout_ms: context.policy.agent_timeout_ms,
          context: agentContext(context),
          ...(context.active_skills.length > 0 ? { active_skills: context.active_skills } : {}),
        }),
        onDone: {
          target: "settling",
          actions: [
            assign(({ context, event }) => ({
              workspace: event.output.workspace,
              consensus: event.output.consensus,
              usage: mergeUsage(context.usage, event.output.usage),
            })),
            {
              type: "record",
              params: ({ context }) => ({
                kind: "CONSENSUS_UPDATED",
                payload: { round: context.round, level: context.consensus, claims: context.workspace.claims },
              }),
            },
            {
              type: "record",
              params: ({ context, event }) => ({
                kind: "DELIB_ROUND_COMPLETED",
                payload: {
                  round: context.round,
                  consensus: context.consensus,
                  revisions: event.output.revisions,
                  proposals: context.workspace.proposals,
                  ...(Object.keys(event.output.usage).length > 0 ? { usage: event.output.usage } : {}),
                },
              }),
            },
          ],
        },
        onError: { target: "done", actions: failed("deliberation") },
      },
    },
    /** Stop at consensus or after the last round; otherwise deliberate again. */
    settling: {
      always: [
        { guard: "deliberationSettled", target: "done" },
        { target: "round", actions: assign({ round: ({ context }) => context.round + 1 }) },
      ],
    },
    done: { type: "final" },
  },
  onDone: "council",
  after: { stageTimeout: { target: "council", actions: overran("deliberation", "deliberation") } },
});
