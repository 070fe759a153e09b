/**
 * The shape of a recipe run's trace (`SimulationTrace`), as `conclave trace`
 * and `client.trace` return it; src/recipes/trace.ts builds it from the
 * turn's event log.
 */
import { z } from "zod";
import { RecipeProvenance } from "./recipeRun.ts";
import { TurnOutcome } from "./turn.ts";

/** One step of a SimulationTrace: a state transition of the run. */
export const SimulationStep = z.object({
  /** From 1, in log order. */
  step: z.number().int().min(1),
  /** The node the transition belongs to; null for the run's own (start, pre-flight, end). */
  node: z.string().nullable(),
  /** The event kind that recorded the transition (`NODE_STARTED`, `ROUTE_TAKEN`, …). */
  kind: z.string(),
  /** Why: the rule or reasoning behind the transition (a router's reason, a judge's critique, the node's kind…). */
  thought: z.string(),
  /** What was done or decided: `call agent content.writer`, `route → billing`, `score 0.4 < 0.8: refine`… */
  action: z.string(),
  /** What came of it: a node's output, a score, an answer, a failure; null when nothing was observed yet. */
  observation: z.unknown(),
  /** The blackboard at that moment (after the transition). */
  snapshot: z.record(z.string(), z.unknown()),
  /** When, in ms on the writer's clock (the event's `ts_monotonic`). */
  ts: z.number(),
});
/** One step of a SimulationTrace: a state transition of the run. */
export type SimulationStep = z.infer<typeof SimulationStep>;

/** The standard trace of a recipe run: its steps, status, outcome and provenance. */
export const SimulationTrace = z.object({
  /** The run's session. */
  session_id: z.string(),
  /** The run's turn in its session. */
  turn_id: z.number().int(),
  /** The recipe's name (`metadata.name`). */
  recipe: z.string(),
  /** The recipe's version, when its metadata has one. */
  version: z.string().optional(),
  /** Why the recipe exists, when a model wrote it (its metadata's generative provenance). */
  provenance: RecipeProvenance,
  /** `running` until the run ends (`completed`, whatever its outcome) or waits for a person (`suspended`). */
  status: z.enum(["running", "suspended", "completed"]),
  /** How the run ended (its TURN_COMPLETED's outcome), once it has. */
  outcome: TurnOutcome.optional(),
  /** One per state transition, in log order. */
  steps: z.array(SimulationStep),
});
/** The standard trace of a recipe run: its steps, status, outcome and provenance. */
export type SimulationTrace = z.infer<typeof SimulationTrace>;

/** The JSON Schema of a SimulationTrace (draft 2020-12). */
export const simulationTraceJsonSchema = (): Record<string, unknown> =>
  z.toJSONSchema(SimulationTrace) as Record<string, unknown>;
