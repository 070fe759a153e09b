import { assign, setup } from "xstate";
import { type Modulators, neutralModulators, neutralStance, type Stance } from "../src/contracts/workspace.ts";
import { defaultTurnPolicy, type TurnOutput, type TurnPolicy, turnMachine } from "./turn.ts";

/**
 * A live session, hosted by a runner: turns run one at a time, in the order
 * they were accepted; the workspace's modulators and stance carry over from
 * one turn to the next.
 *
 *   idle ⇄ running (invokes the `turn` machine)
 *
 * `turn.enqueue` is accepted in any state, so a second turn that arrives while
 * one runs waits its place in the queue.
 */
export interface QueuedTurn {
  turn_id: number;
  text: string;
  user_id?: string;
}

export interface SessionInput {
  session_id: string;
  policy?: TurnPolicy;
  modulators?: Modulators;
  stance?: Stance;
}

export interface SessionContext {
  session_id: string;
  policy: TurnPolicy;
  queue: QueuedTurn[];
  current: QueuedTurn | null;
  modulators: Modulators;
  stance: Stance;
  turns_completed: number;
}

export type SessionEvent = { type: "turn.enqueue"; turn: QueuedTurn };

export const sessionMachine = setup({
  types: {
    input: {} as SessionInput,
    context: {} as SessionContext,
    events: {} as SessionEvent,
  },
  actors: { turn: turnMachine },
  actions: {
    /** Told to the host when a turn ends, whatever its outcome. */
    turnFinished: (_, _output: TurnOutput) => {},
    /** Told to the host when a turn actor itself crashed (a bug, never a stage failure). */
    turnCrashed: (_, _failure: { turn_id: number; error: unknown }) => {},
  },
  guards: {
    hasQueuedTurn: ({ context }) => context.queue.length > 0,
  },
}).createMachine({
  id: "session",
  context: ({ input }) => ({
    session_id: input.session_id,
    policy: input.policy ?? defaultTurnPolicy,
    queue: [],
    current: null,
    modulators: input.modulators ?? neutralModulators(),
    stance: input.stance ?? neutralStance(),
    turns_completed: 0,
  }),
  on: {
    "turn.enqueue": { actions: assign({ queue: ({ context, event }) => [...context.queue, event.turn] }) },
  },
  initial: "idle",
  states: {
    idle: {
      always: { guard: "hasQueuedTurn", target: "running" },
    },
    running: {
      entry: assign(({ context }) => ({ current: context.queue[0] ?? null, queue: context.queue.slice(1) })),
      invoke: {
        id: "turn",
        src: "turn",
        input: ({ context }) => ({
          session_id: context.session_id,
          turn_id: context.current!.turn_id,
          text: context.current!.text,
          ...(context.current!.user_id ? { user_id: context.current!.user_id } : {}),
          policy: context.policy,
          modulators: context.modulators,
          stance: context.stance,
        }),
        onDone: {
          target: "idle",
          actions: [
            assign(({ context, event }) => ({
              modulators: event.output.modulators,
              stance: event.output.stance,
              turns_completed: context.turns_completed + 1,
              current: null,
            })),
            { type: "turnFinished", params: ({ event }) => event.output },
          ],
        },
        onError: {
          target: "idle",
          actions: [
            {
              type: "turnCrashed",
              params: ({ context, event }) => ({ turn_id: context.current?.turn_id ?? 0, error: event.error }),
            },
            assign({ current: null }),
          ],
        },
      },
    },
  },
});
