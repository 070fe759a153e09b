import { assign, sendTo, setup } from "xstate";
import type { TurnOutput, TurnPolicy } from "../src/contracts/turnProtocol.ts";
import { type Modulators, neutralModulators, neutralStance, type Stance } from "../src/contracts/workspace.ts";
import { defaultTurnPolicy, turnMachine } from "./turn/index.ts";

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
  /** Cancelled before it started, with this reason: it starts and ends at once, Cancelled. */
  cancelled?: string;
}

export interface SessionInput {
  session_id: string;
  policy?: TurnPolicy;
  /** Restored from the session's snapshot, after a restart or a takeover. */
  modulators?: Modulators;
  stance?: Stance;
  turns_completed?: number;
  last_turn_id?: number;
}

export interface SessionContext {
  session_id: string;
  policy: TurnPolicy;
  queue: QueuedTurn[];
  current: QueuedTurn | null;
  modulators: Modulators;
  stance: Stance;
  turns_completed: number;
  /** The highest turn id finished (what the session's snapshot records). */
  last_turn_id: number;
  /**
   * The turns this actor finished, newest last (at most FINISHED_KEPT): a
   * turn delivered again is not run again. Not a high-water mark: turns of
   * one session may reach the actor out of turn order (their WAL entries
   * stored out of order, or a takeover), and an earlier one must still run.
   */
  finished: number[];
}

/** How many finished turn ids a session actor remembers. */
export const FINISHED_KEPT = 64;

export type SessionEvent =
  | { type: "turn.enqueue"; turn: QueuedTurn }
  /** Double-texting `interrupt`: stop the running turn (if any) in favour of `by_turn_id`. */
  | { type: "turn.interrupt"; by_turn_id: number }
  /** A client cancelled a turn: the running one stops, a queued one will end as soon as it starts. */
  | { type: "turn.cancel"; turn_id: number; reason: string };

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
    isNewTurn: ({ context, event }) =>
      event.type === "turn.enqueue" &&
      !context.finished.includes(event.turn.turn_id) &&
      context.current?.turn_id !== event.turn.turn_id &&
      !context.queue.some((turn) => turn.turn_id === event.turn.turn_id),
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
    turns_completed: input.turns_completed ?? 0,
    last_turn_id: input.last_turn_id ?? 0,
    finished: [],
  }),
  on: {
    "turn.cancel": {
      actions: assign({
        queue: ({ context, event }) =>
          context.queue.map((turn) => (turn.turn_id === event.turn_id ? { ...turn, cancelled: event.reason } : turn)),
      }),
    },
    "turn.enqueue": {
      guard: "isNewTurn",
      // Turn order, whatever the order of arrival.
      actions: assign({
        queue: ({ context, event }) => [...context.queue, event.turn].sort((a, b) => a.turn_id - b.turn_id),
      }),
    },
  },
  initial: "idle",
  states: {
    idle: {
      always: { guard: "hasQueuedTurn", target: "running" },
    },
    running: {
      on: {
        "turn.interrupt": {
          guard: ({ context, event }) => (context.current?.turn_id ?? 0) < event.by_turn_id,
          actions: sendTo("turn", ({ event }) => event),
        },
        "turn.cancel": [
          {
            guard: ({ context, event }) => context.current?.turn_id === event.turn_id,
            actions: sendTo("turn", ({ event }) => ({ type: "turn.cancel" as const, reason: event.reason })),
          },
          {
            actions: assign({
              queue: ({ context, event }) =>
                context.queue.map((turn) =>
                  turn.turn_id === event.turn_id ? { ...turn, cancelled: event.reason } : turn,
                ),
            }),
          },
        ],
      },
      entry: assign(({ context }) => ({ current: context.queue[0] ?? null, queue: context.queue.slice(1) })),
      invoke: {
        id: "turn",
        src: "turn",
        input: ({ context }) => ({
          session_id: context.session_id,
          turn_id: context.current!.turn_id,
          text: context.current!.text,
          ...(context.current!.user_id ? { user_id: context.current!.user_id } : {}),
          ...(context.current!.cancelled !== undefined ? { cancelled: context.current!.cancelled } : {}),
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
              last_turn_id: Math.max(context.last_turn_id, event.output.turn_id),
              finished: [...context.finished, event.output.turn_id].slice(-FINISHED_KEPT),
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
            assign(({ context }) => ({
              current: null,
              last_turn_id: Math.max(context.last_turn_id, context.current?.turn_id ?? 0),
              finished: [...context.finished, context.current?.turn_id ?? 0].slice(-FINISHED_KEPT),
            })),
          ],
        },
      },
    },
  },
});
