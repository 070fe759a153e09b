import { z } from "zod";
import { ContextArenaState } from "../../contracts/context.ts";
import { Modulators, Stance } from "../../contracts/workspace.ts";

/**
 * What a session carries from one turn to the next, as persisted after each turn.
 * (Kept apart from sessionStore.ts so the checkpoint schemas can use it without an import cycle.)
 */
export const SessionSnapshot = z.object({
  turns_completed: z.number().int().min(0),
  /** The last turn this session finished (in turn order). */
  last_turn_id: z.number().int().min(0),
  modulators: Modulators,
  stance: Stance,
  /** The context arena's carry-over (its compaction summary); absent in snapshots written before it existed. */
  context_arena: ContextArenaState.optional(),
});
export type SessionSnapshot = z.infer<typeof SessionSnapshot>;
