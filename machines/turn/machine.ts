import { assign } from "xstate";
import { agents } from "./agents.ts";
import { initialContext, outcomeOf } from "./context.ts";
import { contextState } from "./contextStage.ts";
import { council } from "./council.ts";
import { critics } from "./critics.ts";
import { deliberation } from "./deliberation.ts";
import { ingest } from "./ingest.ts";
import { completed, memoryCommit } from "./memoryCommit.ts";
import { safety } from "./safety.ts";
import { screened, screening } from "./screening.ts";
import { sensed, sensingFast } from "./sensing.ts";
import { turnSetup } from "./setup.ts";
import { suspended } from "./suspended.ts";

/**
 * The turn statechart: one user turn through the pipeline
 *
 *   ingest → sensing_fast → (safety → completed)
 *          → context → agents (waves) → deliberation (≤ N rounds)
 *          → council (+ voice) → critics → memory_commit → completed
 *   agents → suspended   (an agent's tool call waits for a person's approval)
 *
 * The machine is pure. Every piece of work is an invoked actor and every
 * event of the log is a `record` action; the process hosting the machine
 * supplies both with `turnMachine.provide(...)`. Each stage has a deadline
 * (`stageTimeout`): a stage that fails or overruns adds a warning and the
 * turn goes on, so a turn always reaches `completed` with an outcome.
 *
 * Each stage's states are in a file of their own (their order here is the
 * chart's, which the diagrams follow).
 */
export const turnMachine = turnSetup.createMachine({
  id: "turn",
  context: initialContext,
  initial: "ingest",
  on: {
    "turn.cancel": {
      target: ".completed",
      actions: [
        {
          type: "abandonWave",
          params: ({ event }) => ({ code: "cancelled" as const, reason: `cancelled: ${event.reason}` }),
        },
        "closeOpenStreams",
        assign({ cancelled: ({ event }) => event.reason }),
      ],
    },
    "turn.interrupt": {
      target: ".completed",
      actions: [
        {
          type: "abandonWave",
          params: ({ event }) => ({
            code: "interrupted" as const,
            reason: `interrupted by turn ${event.by_turn_id}`,
          }),
        },
        "closeOpenStreams",
        {
          type: "warn",
          params: ({ context, event }) => ({
            stage: context.stage,
            code: "interrupted",
            message: `interrupted by turn ${event.by_turn_id}`,
          }),
        },
      ],
    },
  },
  states: {
    ingest,
    sensing_fast: sensingFast,
    sensed,
    screening,
    screened,
    safety,
    context: contextState,
    agents,
    deliberation,
    council,
    critics,
    memory_commit: memoryCommit,
    completed,
    suspended,
  },
  output: ({ context }) => ({
    session_id: context.session_id,
    turn_id: context.turn_id,
    response: context.response,
    outcome: outcomeOf(context),
    modulators: context.workspace.modulators,
    stance: context.workspace.stance,
    context_arena: context.context_arena,
    ...(context.suspended ? { suspended: context.suspended } : {}),
  }),
});
