import { HandlerError } from "../../bus/errors.ts";
import { type AgentsPipeline, type PipelineChoice, pipelineLabel } from "../../contracts/pipeline.ts";
import type { RecipeSubmission } from "../../contracts/recipeRun.ts";
import type { TurnSubmission } from "../../contracts/turn.ts";
import type { SessionStore } from "../sessionStore.ts";
import { checkRecipeSubmission, type RecipeIntake } from "./recipeSubmission.ts";

/** What choosing a turn's pipeline needs from the runner. */
export interface PipelineIntake {
  /** The pipeline of sessions that chose none (`RunnerOptions.pipeline`, else `CONCLAVE_PIPELINE`). */
  default: PipelineChoice;
  /**
   * The user's own agents live now: the live roster less the built-in agents. Absent: not known
   * (the agents run in-process), and the `agents` pipeline is refused.
   */
  ownAgents?: () => Promise<string[]>;
}

/** What a submission runs, as its WAL entry records it. */
export interface PipelineResolution {
  /** A recipe run (the submission's own, or the session's pipeline's). */
  recipe?: RecipeSubmission;
  /** The recipe's name, for the turn's default text. */
  recipeName?: string;
  /** A turn of the `agents` pipeline. */
  pipeline?: AgentsPipeline;
  /** The pipeline the submission chose for its session: stored once its turn is. */
  chosen?: PipelineChoice;
  /** Neither the submission nor (as this runner last saw it) its session chose: the runner's default runs. */
  sessionChoseNone?: boolean;
}

/**
 * Decides what an accepted submission runs: its own recipe (this once), else
 * the pipeline it chooses, else the one its session chose, else the runner's
 * default. A recipe pipeline runs its document with the user's message as
 * input `message`, checked as a submitted recipe is; the `agents` pipeline
 * runs the user's agents live now, and is refused (`invalid_request`, in one
 * line naming the fix) when none is. Nothing is stored here.
 */
export async function resolvePipeline(
  deps: { sessions: SessionStore; pipelines: PipelineIntake; recipes: RecipeIntake },
  sessionId: string,
  submission: TurnSubmission,
  tenant: string | null,
): Promise<PipelineResolution> {
  if (submission.recipe)
    return {
      recipe: submission.recipe,
      recipeName: await checkRecipeSubmission(deps.recipes, submission.recipe, tenant),
    };
  const chosen = submission.pipeline;
  const sessionChoice = chosen ? null : await deps.sessions.pipeline(sessionId);
  const pipeline = chosen ?? sessionChoice ?? deps.pipelines.default;
  const resolution: PipelineResolution = chosen ? { chosen } : sessionChoice ? {} : { sessionChoseNone: true };
  if (pipeline.kind === "cognitive") return resolution;
  if (pipeline.kind === "recipe") {
    const recipe: RecipeSubmission = { document: pipeline.document, inputs: { message: submission.text ?? "" } };
    const recipeName = await checkRecipeSubmission(deps.recipes, recipe, tenant).catch((error: unknown) => {
      if (error instanceof HandlerError)
        throw new HandlerError(error.code, `the session's pipeline: ${error.message}`, error.issues);
      throw error;
    });
    return { ...resolution, recipe, recipeName };
  }
  const label = pipelineLabel(pipeline);
  if (!deps.pipelines.ownAgents)
    throw new HandlerError("invalid_request", `pipeline ${label}: this runner runs agents in-process, not yours`);
  const agents = (await deps.pipelines.ownAgents()).sort();
  if (agents.length === 0)
    throw new HandlerError(
      "invalid_request",
      `pipeline ${label}: no agent of your own is live; start them with conclave up --agents ./my-agents.js (or conclave worker --agents ./my-agents.js)`,
    );
  return { ...resolution, pipeline: { kind: "agents", council: pipeline.council, agents: agents.slice(0, 64) } };
}
