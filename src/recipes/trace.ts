/**
 * The standard trace of a recipe run (the seed's `SimulationTrace`): one
 * step per state transition, each with the `thought` behind it, the
 * `action` taken, what was `observed`, and a `snapshot` of the blackboard at
 * that moment. Built from the turn's durable event log, so it is the same
 * after restarts, takeovers and suspensions.
 */
import { z } from "zod";
import type { EngineEvent } from "../contracts/events.ts";
import { RecipeProvenance } from "../contracts/recipeRun.ts";
import { TurnOutcome } from "../contracts/turn.ts";
import { ConclaveError } from "../errors.ts";
import { writePath } from "./paths.ts";

/** One step of a SimulationTrace: a state transition of the run. */
export const SimulationStep = z.object({
  /** From 1, in log order. */
  step: z.number().int().min(1),
  /** The node the transition belongs to; null for the run's own (start, pre-flight, end). */
  node: z.string().nullable(),
  /** The event kind that recorded the transition. */
  kind: z.string(),
  /** Why: the reasoning or rule behind the transition. */
  thought: z.string(),
  /** What was done or decided: a call, a route, a score, a suspension. */
  action: z.string(),
  /** What came of it: an answer, a score, a failure. */
  observation: z.unknown(),
  /** The blackboard at that moment. */
  snapshot: z.record(z.string(), z.unknown()),
  /** When, in ms on the writer's clock. */
  ts: z.number(),
});
/** One step of a SimulationTrace: a state transition of the run. */
export type SimulationStep = z.infer<typeof SimulationStep>;

/** The standard trace of a recipe run: its steps, status, outcome and provenance. */
export const SimulationTrace = z.object({
  session_id: z.string(),
  turn_id: z.number().int(),
  recipe: z.string(),
  version: z.string().optional(),
  provenance: RecipeProvenance,
  status: z.enum(["running", "suspended", "completed"]),
  outcome: TurnOutcome.optional(),
  steps: z.array(SimulationStep),
});
/** The standard trace of a recipe run: its steps, status, outcome and provenance. */
export type SimulationTrace = z.infer<typeof SimulationTrace>;

/** The JSON Schema of a SimulationTrace. */
export const simulationTraceJsonSchema = (): Record<string, unknown> =>
  z.toJSONSchema(SimulationTrace) as Record<string, unknown>;

const short = (value: unknown, max = 120): string => {
  const text = typeof value === "string" ? value : (JSON.stringify(value) ?? String(value));
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
};

/**
 * The trace of one recipe run from its events (in seq order). Throws a
 * `not_found` ConclaveError when the events are not a recipe run's.
 */
export function simulationTrace(events: readonly EngineEvent[]): SimulationTrace {
  const started = events.find((event) => event.kind === "RECIPE_STARTED");
  if (started?.kind !== "RECIPE_STARTED") {
    const turn = events[0] ? `turn ${events[0].session_id}/${events[0].turn_id}` : "the turn";
    throw new ConclaveError("not_found", `${turn} is not a recipe run`);
  }
  let blackboard: Record<string, unknown> = { ...started.payload.inputs };
  let status: SimulationTrace["status"] = "running";
  let outcome: SimulationTrace["outcome"];
  const steps: SimulationStep[] = [];
  const add = (event: EngineEvent, node: string | null, thought: string, action: string, observation: unknown) =>
    steps.push({
      step: steps.length + 1,
      node,
      kind: event.kind,
      thought,
      action,
      observation,
      snapshot: blackboard,
      ts: event.ts_monotonic,
    });
  for (const event of events) {
    switch (event.kind) {
      case "RECIPE_STARTED":
        add(
          event,
          null,
          `run recipe '${event.payload.recipe}'`,
          "seed the blackboard with the inputs",
          event.payload.inputs,
        );
        break;
      case "PREFLIGHT_CHECKED":
        add(
          event,
          null,
          "check the pre-flight constraints before any node runs",
          event.payload.passed ? "go on" : "stop: a required constraint failed",
          { failures: event.payload.failures, warnings: event.payload.warnings },
        );
        break;
      case "NODE_STARTED":
        // A checkpoint is the blackboard as the node started: the ground truth at this point.
        if (event.payload.checkpoint) blackboard = event.payload.checkpoint.blackboard;
        add(
          event,
          event.payload.node,
          `step ${event.payload.step}: the graph reached ${event.payload.kind} node '${event.payload.node}'`,
          event.payload.attempt > 1 ? `start it (attempt ${event.payload.attempt})` : "start it",
          null,
        );
        break;
      case "NODE_COMPLETED":
        if (event.payload.output_key)
          blackboard = writePath(blackboard, event.payload.output_key, event.payload.output);
        add(
          event,
          event.payload.node,
          event.payload.agent ? `agent ${event.payload.agent} answered (${event.payload.worker ?? "?"})` : "done",
          event.payload.output_key ? `write it to '${event.payload.output_key}'` : "keep it",
          event.payload.output,
        );
        break;
      case "NODE_FAILED":
        add(
          event,
          event.payload.node,
          `attempt ${event.payload.attempt} failed (${event.payload.code})`,
          event.payload.retrying ? "try again (policy.max_retries)" : "fail the run",
          event.payload.message,
        );
        break;
      case "ROUTE_TAKEN":
        add(event, event.payload.from, event.payload.reason, `route → ${event.payload.to}`, null);
        break;
      case "EVALUATION_SCORED":
        add(
          event,
          event.payload.node,
          event.payload.critique || "the judge gave no critique",
          event.payload.passed
            ? `pass (score ${event.payload.score})`
            : `refine (score ${event.payload.score}, refinement ${event.payload.refinement})`,
          { score: event.payload.score, passed: event.payload.passed },
        );
        break;
      case "HUMAN_INPUT_REQUESTED":
        add(
          event,
          event.payload.node,
          event.payload.prompt,
          `ask a person${event.payload.required_role ? ` in the role '${event.payload.required_role}'` : ""}`,
          null,
        );
        break;
      case "TURN_SUSPENDED":
        status = "suspended";
        add(event, event.payload.node, "no process holds the run while it waits", "suspend", {
          expires_at: event.payload.expires_at,
        });
        break;
      case "HUMAN_INPUT_RECEIVED":
        status = "running";
        add(
          event,
          event.payload.node,
          event.payload.timed_out
            ? "nobody answered in time"
            : `${event.payload.user_id ?? "someone"} answered${event.payload.role ? ` as ${event.payload.role}` : ""}`,
          "resume",
          event.payload.answer,
        );
        break;
      case "TURN_COMPLETED":
        status = "completed";
        outcome = event.payload.outcome;
        if (event.payload.output) blackboard = event.payload.output;
        add(event, null, "the run ended", `end: ${event.payload.outcome.status}`, event.payload.outcome);
        break;
      default:
        break;
    }
  }
  return {
    session_id: started.session_id,
    turn_id: started.turn_id,
    recipe: started.payload.recipe,
    ...(started.payload.version ? { version: started.payload.version } : {}),
    provenance: started.payload.provenance,
    status,
    ...(outcome ? { outcome } : {}),
    steps,
  };
}

/** One line of a step, for people (`conclave trace`). */
export function describeStep(step: SimulationStep): string {
  const where = step.node ? ` ${step.node}` : "";
  const seen = step.observation === null || step.observation === undefined ? "" : ` → ${short(step.observation)}`;
  return `#${step.step}${where}  ${step.action}  (${step.thought})${seen}`;
}
