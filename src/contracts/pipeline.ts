/**
 * Which turn pipeline a session runs: the built-in cognitive one, only the
 * user's own agents, or a recipe. Chosen for the whole stack (`conclave up
 * --pipeline`, `conclave runner --pipeline`, `CONCLAVE_PIPELINE`) or for one
 * session by a submission's `pipeline` field (stored with the session, so
 * every later turn of the session runs it too, on any runner).
 */
import { z } from "zod";
import { AgentId } from "./ids.ts";
import { JsonObject } from "./recipeRun.ts";

/**
 * A pipeline as a submission (or a runner) names it:
 * - `cognitive`: the built-in pipeline (the 14 built-in agents, council, voice, critics);
 * - `agents`: only the user's own agents; one agent's answer is the reply, several are combined by
 *   the council and said as it decides (`council: true` also has the built-in voice word the reply);
 * - `recipe`: the recipe document runs each turn, with the user's message as its input `message`.
 */
export const PipelineChoice = z.discriminatedUnion("kind", [
  z.object({ kind: z.literal("cognitive") }),
  z.object({ kind: z.literal("agents"), council: z.boolean().default(false) }),
  z.object({ kind: z.literal("recipe"), document: JsonObject }),
]);
export type PipelineChoice = z.infer<typeof PipelineChoice>;

/**
 * An `agents` turn as its WAL entry (and its TURN_STARTED) records it: the user's agents live when
 * it was accepted, so a runner taking it over runs the same ones.
 */
export const AgentsPipeline = z.object({
  kind: z.literal("agents"),
  council: z.boolean(),
  agents: z.array(AgentId).min(1).max(64),
});
export type AgentsPipeline = z.infer<typeof AgentsPipeline>;

/** The `--pipeline` syntax, for usage lines and errors. */
export const PIPELINE_SYNTAX = "cognitive, agents, agents+council or recipe:FILE";

/** A pipeline as text names it (`--pipeline`, `CONCLAVE_PIPELINE`): a recipe by its file, not yet read. */
export type PipelineName =
  | { kind: "cognitive" }
  | { kind: "agents"; council: boolean }
  | { kind: "recipe"; file: string };

/**
 * Reads a pipeline's name: `cognitive`, `agents`, `agents+council` or `recipe:FILE`. Returns the
 * one-line reason when it is none of them.
 */
export function parsePipelineName(text: string): PipelineName | { error: string } {
  const name = text.trim();
  if (name === "cognitive") return { kind: "cognitive" };
  if (name === "agents") return { kind: "agents", council: false };
  if (name === "agents+council") return { kind: "agents", council: true };
  if (name.startsWith("recipe:")) {
    const file = name.slice("recipe:".length).trim();
    if (file.length > 0) return { kind: "recipe", file };
    return { error: "recipe: needs a file, e.g. recipe:./my-recipe.yaml" };
  }
  return { error: `must be ${PIPELINE_SYNTAX}, not '${name}'` };
}

/** How a pipeline reads in logs and events: `cognitive`, `agents`, `agents+council`, `recipe`. */
export const pipelineLabel = (pipeline: PipelineChoice | AgentsPipeline): string =>
  pipeline.kind === "agents" && pipeline.council ? "agents+council" : pipeline.kind;
