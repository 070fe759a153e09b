import { enqueueActions, setup } from "xstate";
import type { RecipeAgentEvent, RecipeRunInput, RecipeRunOutput } from "../../src/contracts/recipeProtocol.ts";
import type { CancelEvent, InterruptEvent, TurnRecord } from "../../src/contracts/turnProtocol.ts";
import { recipeActors } from "./actors.ts";
import type { RecipeContext } from "./context.ts";

/** Every event a recipe run accepts: its agents' answers and streams, a cancellation, an interrupt. */
export type RecipeEvent = RecipeAgentEvent | CancelEvent | InterruptEvent;

/**
 * A recipe machine's types and named implementations. `compileRecipe`
 * builds each recipe's states with `recipeSetup.createStateConfig` and
 * assembles them with `recipeSetup.createMachine`.
 */
export const recipeSetup = setup({
  types: {
    context: {} as RecipeContext,
    input: {} as RecipeRunInput,
    output: {} as RecipeRunOutput,
    events: {} as RecipeEvent,
  },
  actors: recipeActors,
  actions: {
    /** Appends one event to the turn's log. Provided by the host; a no-op in a bare machine. */
    record: (_, _event: TurnRecord) => {},
  },
  delays: {
    /** What is left of the run's global deadline (policy.timeout_seconds). */
    runDeadline: ({ context }) => context.deadline_in_ms ?? 0,
  },
}).extend({
  actions: {
    /** Every stream still open (a node cut short: deadline, cancel, failure) gets its STREAM_END. */
    closeOpenStreams: enqueueActions<
      RecipeContext,
      RecipeEvent,
      undefined,
      RecipeEvent,
      never,
      { type: "record"; params: TurnRecord },
      never
    >(({ context, enqueue }) => {
      for (const [streamId, chunks] of Object.entries(context.open_streams))
        enqueue({ type: "record", params: { kind: "STREAM_END", payload: { stream_id: streamId, chunks } } });
      enqueue.assign({ open_streams: {} });
    }),
  },
});
