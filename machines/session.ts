import { assign, fromCallback, sendTo, setup } from "xstate";
import { type ContextArenaState, emptyArenaState } from "../src/contracts/context.ts";
import type { AgentsPipeline } from "../src/contracts/pipeline.ts";
import type { RecipeRunOutput } from "../src/contracts/recipeProtocol.ts";
import type { HumanAnswer, JsonObject, RecipeCheckpoint } from "../src/contracts/recipeRun.ts";
import type { TurnOutput, TurnPolicy, TurnSuspension } from "../src/contracts/turnProtocol.ts";
import { type Modulators, neutralModulators, neutralStance, type Stance } from "../src/contracts/workspace.ts";
import { MissingActorError } from "./errors.ts";
import { defaultTurnPolicy, turnMachine } from "./turn/index.ts";

/**
 * A live session, hosted by a runner: turns run one at a time, in the order
 * they were accepted; the workspace's modulators and stance carry over from
 * one turn to the next.
 *
 *   idle ⇄ running        (invokes the `turn` machine: the built-in pipeline)
 *   idle ⇄ runningRecipe  (invokes `recipeTurn`: a recipe's compiled machine, hosted by the runner)
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
  /** A recipe run rather than a pipeline turn. */
  recipe?: RecipeStart;
  /** A pipeline turn of the `agents` pipeline: the user's agents it runs. */
  pipeline?: AgentsPipeline;
}

/** How a recipe run starts: its document and inputs, and where it goes on from when it was under way. */
export interface RecipeStart {
  document: JsonObject;
  inputs: JsonObject;
  /** Its RECIPE_STARTED is already in the log (a takeover, or a suspension answered). */
  started: boolean;
  resume?: { at: string; checkpoint: RecipeCheckpoint; answer?: HumanAnswer };
  /** The answer is new (the resume request's), not yet in the log. */
  new_answer?: boolean;
  /** Epoch ms by which the run must end (policy.timeout_seconds), when it was set before. */
  deadline_at?: number;
  /** Write tools only simulate (`conclave run --dry-run`). */
  dry_run?: boolean;
  /** Tool calls an earlier attempt of the run finished, by call id: answered from here, not made again. */
  finished_tool_calls?: Record<string, FinishedToolCall>;
  /** Delegations an earlier attempt finished, by call id: their answers, not asked again. */
  delegations?: Record<string, { output: unknown }>;
  /** People's answers to tool-call approvals, by call id. */
  tool_approvals?: Record<string, { approved: boolean; user_id?: string; reason?: string }>;
  /** Model calls an earlier attempt recorded, by agent call (`call_key`), in order: given back to the agent, not made again. */
  model_steps?: Record<string, { method: string; result: unknown }[]>;
}

/** How a tool call ended, as its TOOL_CALL_FINISHED records it. */
export interface FinishedToolCall {
  ok: boolean;
  result?: unknown;
  error?: { code: string; message: string };
  simulated?: boolean;
}

/** The input of the `recipeTurn` actor. */
export interface RecipeTurnInput {
  session_id: string;
  turn_id: number;
  text: string;
  user_id?: string;
  cancelled?: string;
  recipe: RecipeStart;
}

/** What `recipeTurn` sends back: its run's end (or suspension), or that it crashed. */
export type RecipeTurnEvent =
  | { type: "recipe.finished"; output: RecipeRunOutput }
  | { type: "recipe.crashed"; error: unknown };

export interface SessionInput {
  session_id: string;
  policy?: TurnPolicy;
  /** Restored from the session's snapshot, after a restart or a takeover. */
  modulators?: Modulators;
  stance?: Stance;
  context_arena?: ContextArenaState;
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
  /** The context arena's carry-over: the compaction summary, the model's last count (docs/context.md). */
  context_arena: ContextArenaState;
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
  | { type: "turn.cancel"; turn_id: number; reason: string }
  | RecipeTurnEvent;

export const sessionMachine = setup({
  types: {
    input: {} as SessionInput,
    context: {} as SessionContext,
    events: {} as SessionEvent,
  },
  actors: {
    turn: turnMachine,
    /** Runs one recipe turn; the host provides it (it compiles the recipe and runs its machine). */
    recipeTurn: fromCallback<
      { type: "turn.cancel"; reason: string } | { type: "turn.interrupt"; by_turn_id: number },
      RecipeTurnInput,
      RecipeTurnEvent
    >(() => {
      throw new MissingActorError("recipeTurn", "session");
    }),
  },
  actions: {
    /** Told to the host when a turn ends, whatever its outcome. */
    turnFinished: (_, _output: TurnOutput) => {},
    /**
     * Told to the host when a turn suspends (not finished: it will be resumed): a recipe run at a
     * human node, or a pipeline turn whose agent's tool call waits for approval.
     */
    turnSuspended: (_, _output: { turn_id: number; suspended?: TurnSuspension }) => {},
    /** Told to the host when a turn actor itself crashed (a bug, never a stage failure). */
    turnCrashed: (_, _failure: { turn_id: number; error: unknown }) => {},
    /** The next queued turn becomes the current one. */
    takeNext: assign(({ context }) => ({ current: context.queue[0] ?? null, queue: context.queue.slice(1) })),
    forwardInterrupt: sendTo("turn", ({ event }) => event),
    forwardCancel: sendTo("turn", ({ event }) => ({
      type: "turn.cancel" as const,
      reason: event.type === "turn.cancel" ? event.reason : "cancelled",
    })),
    /** A queued turn is cancelled: it ends, Cancelled, as soon as it starts. */
    markQueuedCancelled: assign({
      queue: ({ context, event }) =>
        event.type === "turn.cancel"
          ? context.queue.map((turn) => (turn.turn_id === event.turn_id ? { ...turn, cancelled: event.reason } : turn))
          : context.queue,
    }),
    /** The current turn suspended: not finished (not counted), the same turn id comes back when it is answered. */
    setAside: assign(({ context }, output: { turn_id: number }) => ({
      last_turn_id: Math.max(context.last_turn_id, output.turn_id),
      current: null,
    })),
    /** The current turn crashed: it counts as run, so a redelivery does not run it again here. */
    forgetCurrent: assign(({ context }) => ({
      current: null,
      last_turn_id: Math.max(context.last_turn_id, context.current?.turn_id ?? 0),
      finished: [...context.finished, context.current?.turn_id ?? 0].slice(-FINISHED_KEPT),
    })),
  },
  guards: {
    /** The turn (a recipe run, or a pipeline turn waiting for an approval) ended suspended, not finished. */
    suspends: ({ event }) =>
      "output" in event && (event.output as { suspended?: unknown } | undefined)?.suspended !== undefined,
    hasQueuedTurn: ({ context }) => context.queue.length > 0,
    nextIsRecipe: ({ context }) => context.queue[0]?.recipe !== undefined,
    /** A newer turn interrupts the running one (double-texting). */
    interruptsCurrent: ({ context, event }) =>
      event.type === "turn.interrupt" && (context.current?.turn_id ?? 0) < event.by_turn_id,
    cancelsCurrent: ({ context, event }) => event.type === "turn.cancel" && context.current?.turn_id === event.turn_id,
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
    context_arena: input.context_arena ?? emptyArenaState(),
    turns_completed: input.turns_completed ?? 0,
    last_turn_id: input.last_turn_id ?? 0,
    finished: [],
  }),
  on: {
    "turn.cancel": { actions: "markQueuedCancelled" },
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
      always: [
        { guard: "nextIsRecipe", target: "runningRecipe" },
        { guard: "hasQueuedTurn", target: "running" },
      ],
    },
    runningRecipe: {
      on: {
        "turn.interrupt": { guard: "interruptsCurrent", actions: "forwardInterrupt" },
        "turn.cancel": [{ guard: "cancelsCurrent", actions: "forwardCancel" }, { actions: "markQueuedCancelled" }],
        "recipe.finished": [
          {
            guard: "suspends",
            target: "idle",
            actions: [
              { type: "setAside", params: ({ event }) => event.output },
              { type: "turnSuspended", params: ({ event }) => event.output },
            ],
          },
          {
            target: "idle",
            actions: [
              assign(({ context, event }) => ({
                turns_completed: context.turns_completed + 1,
                last_turn_id: Math.max(context.last_turn_id, event.output.turn_id),
                finished: [...context.finished, event.output.turn_id].slice(-FINISHED_KEPT),
                current: null,
              })),
              {
                type: "turnFinished",
                params: ({ context, event }) => ({
                  session_id: context.session_id,
                  turn_id: event.output.turn_id,
                  response: event.output.response,
                  outcome: event.output.outcome ?? { status: "Complete" as const },
                  modulators: context.modulators,
                  stance: context.stance,
                }),
              },
            ],
          },
        ],
        "recipe.crashed": {
          target: "idle",
          actions: [
            {
              type: "turnCrashed",
              params: ({ context, event }) => ({ turn_id: context.current?.turn_id ?? 0, error: event.error }),
            },
            "forgetCurrent",
          ],
        },
      },
      entry: "takeNext",
      invoke: {
        id: "turn",
        src: "recipeTurn",
        input: ({ context }) => ({
          session_id: context.session_id,
          turn_id: context.current!.turn_id,
          text: context.current!.text,
          ...(context.current!.user_id ? { user_id: context.current!.user_id } : {}),
          ...(context.current!.cancelled !== undefined ? { cancelled: context.current!.cancelled } : {}),
          recipe: context.current!.recipe!,
        }),
      },
    },
    running: {
      on: {
        "turn.interrupt": { guard: "interruptsCurrent", actions: "forwardInterrupt" },
        "turn.cancel": [{ guard: "cancelsCurrent", actions: "forwardCancel" }, { actions: "markQueuedCancelled" }],
      },
      entry: "takeNext",
      invoke: {
        id: "turn",
        src: "turn",
        input: ({ context }) => ({
          session_id: context.session_id,
          turn_id: context.current!.turn_id,
          text: context.current!.text,
          ...(context.current!.user_id ? { user_id: context.current!.user_id } : {}),
          ...(context.current!.cancelled !== undefined ? { cancelled: context.current!.cancelled } : {}),
          ...(context.current!.pipeline ? { pipeline: context.current!.pipeline } : {}),
          policy: context.policy,
          modulators: context.modulators,
          stance: context.stance,
          context_arena: context.context_arena,
        }),
        onDone: [
          {
            guard: "suspends",
            target: "idle",
            actions: [
              { type: "setAside", params: ({ event }) => event.output },
              { type: "turnSuspended", params: ({ event }) => event.output },
            ],
          },
          {
            target: "idle",
            actions: [
              assign(({ context, event }) => ({
                modulators: event.output.modulators,
                stance: event.output.stance,
                context_arena: event.output.context_arena ?? context.context_arena,
                turns_completed: context.turns_completed + 1,
                last_turn_id: Math.max(context.last_turn_id, event.output.turn_id),
                finished: [...context.finished, event.output.turn_id].slice(-FINISHED_KEPT),
                current: null,
              })),
              { type: "turnFinished", params: ({ event }) => event.output },
            ],
          },
        ],
        onError: {
          target: "idle",
          actions: [
            {
              type: "turnCrashed",
              params: ({ context, event }) => ({ turn_id: context.current?.turn_id ?? 0, error: event.error }),
            },
            "forgetCurrent",
          ],
        },
      },
    },
  },
});
