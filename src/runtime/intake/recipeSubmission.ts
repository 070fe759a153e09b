import type { z } from "zod";
import { type RemoteAgentPolicy, refusedRemoteAgents, remoteAgentPolicyOrNone } from "../../a2a/policy.ts";
import { HandlerError } from "../../bus/errors.ts";
import { describeIssues } from "../../contracts/issues.ts";
import type { RecipeSubmission } from "../../contracts/recipeRun.ts";
import { messageOf } from "../../errors.ts";
import { fromRecipeJsonSchema } from "../../recipes/jsonSchema.ts";
import { checkAgentRefs, loadRecipe, RecipeValidationError } from "../../recipes/load.ts";

/** What checking a recipe submission needs from the runner. */
export interface RecipeIntake {
  /** Names of the runner's logic handlers. */
  logicHandlers: readonly string[];
  /** The agents live workers host now; absent: not checked (the agents run in-process). */
  liveAgents?: () => Promise<ReadonlySet<string>>;
  /** Which remote A2A agents a recipe may name. Default: the environment's (CONCLAVE_A2A_ALLOW, CONCLAVE_A2A_TENANTS). */
  remoteAgents?: RemoteAgentPolicy;
}

/**
 * Checks a recipe submission before it is accepted, so a bad one is refused
 * to its submitter at once and nothing runs: the document loads (every
 * issue named by its path), the inputs match `interface.inputs`, every
 * remote A2A agent it names is one the operator allows (and `tenant`, when
 * a tenant submits it, may name), and every agent it calls is hosted by a
 * live worker. Returns the recipe's name.
 */
export async function checkRecipeSubmission(
  intake: RecipeIntake,
  submission: RecipeSubmission,
  tenant: string | null = null,
): Promise<string> {
  let recipe: ReturnType<typeof loadRecipe>;
  try {
    recipe = loadRecipe(submission.document, { logicHandlers: intake.logicHandlers });
  } catch (error) {
    if (error instanceof RecipeValidationError)
      throw new HandlerError(
        "invalid_request",
        `recipe: ${error.message}`,
        describeIssues(error.issues, { at: "recipe.document" }),
      );
    throw error;
  }
  if (recipe.inputs_schema) {
    let schema: z.ZodType;
    try {
      schema = fromRecipeJsonSchema(recipe.inputs_schema);
    } catch (error) {
      throw new HandlerError(
        "invalid_request",
        `recipe: interface.inputs is not a usable JSON Schema: ${messageOf(error)}`,
      );
    }
    const checked = schema.safeParse(submission.inputs);
    if (!checked.success) {
      const issues = describeIssues(checked.error, { at: "recipe.inputs" });
      throw new HandlerError(
        "invalid_request",
        `recipe '${recipe.name}': inputs do not match interface.inputs: ${issues.join("; ")}`,
        issues,
      );
    }
  }
  if (recipe.remote_agents) {
    // A bad CONCLAVE_A2A_ALLOW allows nothing: the submitter is told not allowed, not the operator's setting.
    const policy = intake.remoteAgents ?? remoteAgentPolicyOrNone();
    const refused = refusedRemoteAgents(recipe.remote_agents, tenant, policy);
    if (refused.length > 0)
      throw new HandlerError("forbidden", `recipe '${recipe.name}': ${refused.join("; ")}`, refused);
  }
  if (intake.liveAgents) {
    const unknown = checkAgentRefs(recipe, await intake.liveAgents());
    if (unknown.length > 0) {
      const issues = describeIssues(unknown, { at: "recipe.document" });
      throw new HandlerError("invalid_request", `recipe '${recipe.name}': ${issues.join("; ")}`, issues);
    }
  }
  return recipe.name;
}
