import { setup } from "xstate";
import type { TurnEvent, TurnOutput, TurnRecord } from "../../src/contracts/turnProtocol.ts";
import { turnActions } from "./actions.ts";
import { turnActors } from "./actors.ts";
import type { TurnContext, TurnInput } from "./context.ts";
import { arenaActions } from "./contextArena.ts";
import { turnDelays, turnGuards } from "./guards.ts";

/**
 * The turn's types and named implementations. Each stage's states are written
 * with `turnSetup.createStateConfig`, so they are checked against these, and
 * machine.ts assembles them with `turnSetup.createMachine`.
 */
export const turnSetup = setup({
  types: {
    context: {} as TurnContext,
    input: {} as TurnInput,
    output: {} as TurnOutput,
    events: {} as TurnEvent,
  },
  actors: turnActors,
  actions: {
    /** Appends one event to the turn's log. Provided by the host; a no-op in a bare machine. */
    record: (_, _event: TurnRecord) => {},
  },
  delays: turnDelays,
  guards: turnGuards,
}).extend({ actions: { ...turnActions, ...arenaActions } });
