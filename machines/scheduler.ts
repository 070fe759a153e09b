import { assign, fromPromise, setup } from "xstate";
import { type Cooldowns, planWaves } from "../src/cognition/scheduler.ts";
import type { AgentManifest } from "../src/contracts/agent.ts";
import type { PlanWavesReply, PlanWavesRequest } from "../src/contracts/scheduler.ts";

/**
 * The scheduler answering one turn's request for waves:
 *
 *   loading → planning → saving → planned
 *
 * The session's cooldowns are loaded, the waves planned (pure), the agents
 * scheduled by score marked fired, and the cooldowns saved, so they survive
 * a worker restart. If the store cannot be read the plan ignores cooldowns;
 * if it cannot be written the plan still goes out. Both are noted.
 */
export interface SchedulerInput {
  request: PlanWavesRequest;
  manifests: AgentManifest[];
  /** Epoch milliseconds, given by the host: the machine reads no clock. */
  now: number;
}

export interface SchedulerOutput {
  reply: PlanWavesReply;
  notes: string[];
}

export const schedulerMachine = setup({
  types: {
    input: {} as SchedulerInput,
    context: {} as SchedulerInput & {
      cooldowns: Cooldowns;
      plan: PlanWavesReply | null;
      next: Cooldowns;
      notes: string[];
    },
    output: {} as SchedulerOutput,
  },
  actors: {
    loadCooldowns: fromPromise<Cooldowns, { session_id: string }>(async () => ({})),
    saveCooldowns: fromPromise<void, { session_id: string; cooldowns: Cooldowns }>(async () => {}),
  },
}).createMachine({
  id: "scheduler",
  context: ({ input }) => ({ ...input, cooldowns: {}, plan: null, next: {}, notes: [] }),
  initial: "loading",
  states: {
    loading: {
      invoke: {
        src: "loadCooldowns",
        input: ({ context }) => ({ session_id: context.request.session_id }),
        onDone: { target: "planning", actions: assign({ cooldowns: ({ event }) => event.output }) },
        onError: {
          target: "planning",
          actions: assign({
            notes: ({ context, event }) => [...context.notes, `cooldowns not loaded: ${String(event.error)}`],
          }),
        },
      },
    },
    planning: {
      entry: assign(({ context }) => {
        const { cooldowns, ...plan } = planWaves(context.manifests, {
          sensors: context.request.sensors,
          modulators: context.request.modulators,
          tokenBudget: context.request.token_budget,
          cooldowns: context.cooldowns,
          now: context.now,
        });
        return { plan, next: cooldowns };
      }),
      always: "saving",
    },
    saving: {
      invoke: {
        src: "saveCooldowns",
        input: ({ context }) => ({ session_id: context.request.session_id, cooldowns: context.next }),
        onDone: "planned",
        onError: {
          target: "planned",
          actions: assign({
            notes: ({ context, event }) => [...context.notes, `cooldowns not saved: ${String(event.error)}`],
          }),
        },
      },
    },
    planned: { type: "final" },
  },
  output: ({ context }) => ({ reply: context.plan!, notes: context.notes }),
});
