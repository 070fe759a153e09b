import type { TurnWarning } from "../../contracts/turn.ts";
import { messageOf } from "../../errors.ts";

/**
 * The phases of a memory commit that can fail on their own without failing the turn: the turn
 * still completes, as PartialSuccess with one warning per phase that fell short.
 */

/** The memory commit's phases, in the order they run. */
export const MEMORY_PHASES = [
  "episode_write",
  "fact_extraction",
  "pattern_persistence",
  "persona_evolution",
  "runtime_state_persist",
] as const;

/**
 * A phase of the memory commit: writing the episode, extracting facts and threads, persisting
 * them, evolving the persona, persisting the runtime state (turn count and cadence).
 */
export type MemoryPhase = (typeof MEMORY_PHASES)[number];

/**
 * The {@link TurnWarning} for a memory phase that failed: code `memory_<phase>`, the error's
 * message, subject `memory` (as the memory commit stage's own warnings have).
 *
 * The stage is `memory_commit`: `TurnWarning.stage` must be one of the pipeline's stages, and
 * these phases all run inside that one (machines/turn/memoryCommit.ts).
 */
export function phaseWarning(phase: MemoryPhase, error: unknown): TurnWarning & { stage: "memory_commit" } {
  return { stage: "memory_commit", code: `memory_${phase}`, message: messageOf(error), subject: "memory" };
}
