import type { RecipeStart } from "../../../machines/session.ts";
import type { EngineEvent, EventPayload } from "../../contracts/events.ts";
import type { HumanAnswer, JsonObject, RecipeCheckpoint } from "../../contracts/recipeRun.ts";
import type { WalEntry } from "../../contracts/wal.ts";
import type { Recipe } from "../../recipes/recipe.ts";
import { approvalOf, recordedToolSteps } from "../toolCalls/recordedToolSteps.ts";
import type { RecordedRunMemory } from "./runMemory.ts";

/**
 * How a recipe run starts, with what its log holds of its memory steps
 * (MEMORY_RETRIEVED, MEMORY_COMMITTED): a run that goes on from its log
 * takes them from there, and does not retrieve or commit again (a retrieval
 * recorded by reference is resolved: its records read by id, not ranked again).
 */
export type RecipeRunStart = RecipeStart & { memory?: RecordedRunMemory };

/** What an earlier attempt of the run recorded of its memory (nothing, for a fresh run). */
export const recordedMemoryOf = (start: RecipeStart): RecordedRunMemory => (start as RecipeRunStart).memory ?? {};

/**
 * RECIPE_STARTED's payload for a run of `recipe` (distributed or in-process): its document, its
 * screened inputs, its policy, the deadline its timeout sets, its provenance, and whether it is a dry run.
 */
export function recipeStartedPayload(
  recipe: Recipe,
  run: { document: JsonObject; inputs: JsonObject; deadlineAt: number | undefined; dryRun: boolean },
): EventPayload<"RECIPE_STARTED"> {
  const timeout = recipe.policy.timeout_seconds;
  return {
    recipe: recipe.name,
    ...(recipe.version ? { version: recipe.version } : {}),
    shape: recipe.shape,
    document: run.document,
    inputs: run.inputs,
    execution_mode: recipe.policy.execution_mode,
    ...(timeout !== undefined ? { timeout_seconds: timeout } : {}),
    ...(run.deadlineAt !== undefined ? { deadline_at: run.deadlineAt } : {}),
    provenance: recipe.provenance,
    ...(run.dryRun ? { dry_run: true } : {}),
  };
}

/**
 * How a recipe turn starts, from its WAL entry and what its log already
 * holds. A fresh run starts from its document. A run under way (taken over
 * after its runner died, or a suspension answered) goes on from its last
 * checkpoint (the last NODE_STARTED that carries one) with the blackboard
 * recorded there, and the answer to its human node: the new one in the
 * entry, or one already recorded after its last suspension; and the
 * memory it retrieved and committed, if recorded (not asked again).
 *
 * Returns null when the entry is no recipe run.
 */
export function recipeStartOf(
  entry: WalEntry,
  stored: readonly EngineEvent[] = [],
  now = Date.now(),
): RecipeRunStart | null {
  let started: Extract<EngineEvent, { kind: "RECIPE_STARTED" }> | undefined;
  let checkpoint: { at: string; checkpoint: RecipeCheckpoint } | undefined;
  let received: HumanAnswer | undefined;
  let deadlineAt: number | undefined;
  let remainingMs: number | undefined;
  const memory: RecordedRunMemory = {};
  for (const event of stored) {
    switch (event.kind) {
      case "MEMORY_RETRIEVED":
        memory.retrieved = event.payload;
        break;
      case "MEMORY_COMMITTED": {
        const { summary, stored, warnings } = event.payload;
        memory.committed = { summary, stored, ...(warnings ? { warnings } : {}) };
        break;
      }
      case "RECIPE_STARTED":
        started = event;
        deadlineAt = event.payload.deadline_at;
        break;
      case "NODE_STARTED":
        if (event.payload.checkpoint) checkpoint = { at: event.payload.node, checkpoint: event.payload.checkpoint };
        break;
      case "TURN_SUSPENDED":
        received = undefined;
        remainingMs = event.payload.remaining_ms;
        break;
      case "HUMAN_INPUT_RECEIVED":
        received = event.payload;
        // Waiting for a person does not count against the run's deadline: the clock restarts with what was left.
        if (remainingMs !== undefined) deadlineAt = event.ts_monotonic + remainingMs;
        break;
    }
  }
  const answer = entry.resume ?? received;
  const { finished: toolCalls, modelSteps, delegations, approvals } = recordedToolSteps(stored);
  const resumed = entry.resume ? approvalOf(entry.resume) : null;
  if (resumed) approvals[resumed.callId] = resumed.answer;
  if (entry.resume && remainingMs !== undefined) deadlineAt = now + remainingMs;
  if (!started) {
    if (!entry.recipe) return null;
    return {
      document: entry.recipe.document,
      inputs: entry.recipe.inputs,
      started: false,
      ...(entry.recipe.dry_run ? { dry_run: true } : {}),
    };
  }
  return {
    document: started.payload.document,
    inputs: started.payload.inputs,
    started: true,
    ...(started.payload.dry_run ? { dry_run: true } : {}),
    ...(checkpoint ? { resume: { ...checkpoint, ...(answer ? { answer } : {}) } } : {}),
    ...(entry.resume ? { new_answer: true } : {}),
    ...(deadlineAt !== undefined ? { deadline_at: deadlineAt } : {}),
    ...(Object.keys(toolCalls).length > 0 ? { finished_tool_calls: toolCalls } : {}),
    ...(Object.keys(modelSteps).length > 0 ? { model_steps: modelSteps } : {}),
    ...(Object.keys(approvals).length > 0 ? { tool_approvals: approvals } : {}),
    ...(Object.keys(delegations).length > 0 ? { delegations } : {}),
    ...(memory.retrieved || memory.committed ? { memory } : {}),
  };
}
