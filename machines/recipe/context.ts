import type { RecipeRunInput } from "../../src/contracts/recipeProtocol.ts";
import type { HumanAnswer, JsonObject, ToolApproval } from "../../src/contracts/recipeRun.ts";
import type { TurnWarning } from "../../src/contracts/turn.ts";
import type { Usage } from "../../src/contracts/usage.ts";

/** A recipe run's state: the blackboard and the counters that bound it. */
export interface RecipeContext {
  session_id: string;
  turn_id: number;
  inputs: JsonObject;
  blackboard: JsonObject;
  /** Node visits so far, against policy.max_steps. */
  steps: number;
  /** Per evaluator node, the refinements it asked for, against its max_refinements. */
  refinements: Record<string, number>;
  /** Per node, the attempt under way (policy.max_retries). */
  attempts: Record<string, number>;
  /** Where a resumed run goes on from, and the answer it resumes with. */
  resume_at: string | null;
  answer: HumanAnswer | null;
  /** Streams opened and not yet closed, with how many chunks each has had. */
  open_streams: Record<string, number>;
  warnings: TurnWarning[];
  /** Why the run failed, once it has. */
  failure: { code: string; message: string } | null;
  cancelled: string | null;
  /** The human node the run waits at, once suspended. */
  suspended_at: string | null;
  /** What an agent node suspended for (a tool call's approval): its prompt, the approver's role, the call. */
  waiting: { prompt: string; required_role?: string; approval: ToolApproval } | null;
  /** The last evaluator verdicts, by node. */
  scores: Record<string, { score: number; critique: string }>;
  usage: Record<string, Usage>;
  deadline_in_ms: number | null;
  /** Warnings of the pre-flight check, and whether it failed. */
  preflight: { failed: { variable: string; operator: string; message: string }[] } | null;
  /** The optional constraints (indexes in `requirements`) already warned about: each warns once per run. */
  constraint_warned: number[];
}

export const initialRecipeContext = ({ input }: { input: RecipeRunInput }): RecipeContext => ({
  session_id: input.session_id,
  turn_id: input.turn_id,
  inputs: input.inputs,
  blackboard: input.resume?.checkpoint.blackboard ?? {},
  steps: input.resume?.checkpoint.steps ?? 0,
  refinements: input.resume?.checkpoint.refinements ?? {},
  attempts: {},
  resume_at: input.resume?.at ?? null,
  answer: input.resume?.answer ?? null,
  open_streams: {},
  warnings: [],
  failure: null,
  cancelled: input.cancelled ?? null,
  suspended_at: null,
  waiting: null,
  scores: {},
  usage: {},
  deadline_in_ms: input.deadline_in_ms ?? null,
  preflight: null,
  constraint_warned: [],
});
