/**
 * What an eval runs each case against: one agent (as a one-step recipe
 * naming it, so its answer alone is the reply) or a recipe; and how a case
 * becomes the run's inputs and the run's blackboard becomes the reply.
 */
import type { JsonObject } from "../../contracts/recipeRun.ts";

/** An eval's target: one agent, by id (with the tools it may call), or a recipe document. */
export type EvalTarget =
  | {
      /** The agent's id, e.g. `app.echo`: a live worker must host it. */
      agent: string;
      /** The tools it may call (their names): a recipe offers an agent only the tools it lists. */
      tools?: readonly string[];
    }
  | {
      /** A recipe document (graph or workflow shape, as parsed JSON/YAML). */
      recipe: JsonObject;
      /**
       * The blackboard path (dotted) whose value is the reply. Default: the
       * output of the node that completed last.
       */
      output?: string;
    };

/** The node of the one-step recipe, and so the blackboard key of the agent's answer. */
export const AGENT_STEP = "answer";

/** The one-step workflow recipe that asks `agent` (offered `tools`) with the run's inputs. */
export function agentRecipe(agent: string, inputNames: readonly string[], tools: readonly string[] = []): JsonObject {
  const inputs = Object.fromEntries(inputNames.map((name) => [name, name]));
  const definitions: JsonObject = Object.fromEntries(
    tools.map((tool) => [`tool_${tool}`, { type: "tool", id: tool, name: tool }]),
  );
  if (tools.length > 0) definitions.agent = { type: "agent", id: agent, tools: tools.map((tool) => `tool_${tool}`) };
  return {
    apiVersion: "coreason.ai/v2",
    kind: "Recipe",
    metadata: { name: "eval-agent", description: `One step: ${agent} answers the case.` },
    ...(tools.length > 0 ? { definitions } : {}),
    workflow: {
      start: AGENT_STEP,
      steps: { [AGENT_STEP]: { type: "agent", agent: tools.length > 0 ? "agent" : agent, inputs } },
    },
  };
}

/** A case's input as a run's inputs: a message is written under `inputKey`, an object is the inputs. */
export function caseInputs(input: string | Record<string, unknown>, inputKey: string): JsonObject {
  return typeof input === "string" ? { [inputKey]: input } : (input as JsonObject);
}

/** A case's input as text, for the judge and the critics: a message as it is, an object as JSON. */
export const inputText = (input: string | Record<string, unknown>): string =>
  typeof input === "string" ? input : JSON.stringify(input);

/**
 * An agent's or a node's output as the reply's text: a string as it is; an
 * object's `reply` string; else the text of its `say` proposals, joined by a
 * space; else the value as JSON (which the json_schema scorer parses back).
 */
export function replyText(value: unknown): string {
  if (typeof value === "string") return value;
  if (typeof value === "object" && value !== null && !Array.isArray(value)) {
    const record = value as Record<string, unknown>;
    if (typeof record.reply === "string") return record.reply;
    const proposals = Array.isArray(record.proposals) ? record.proposals : [];
    const said = proposals.flatMap((proposal) => {
      const { kind, text } = (proposal ?? {}) as { kind?: unknown; text?: unknown };
      return kind === "say" && typeof text === "string" ? [text] : [];
    });
    if (said.length > 0) return said.join(" ");
  }
  return JSON.stringify(value ?? null);
}

/** The value at a dotted path of the blackboard (`review.score`), or undefined. */
export function valueAt(blackboard: JsonObject, path: string): unknown {
  let value: unknown = blackboard;
  for (const key of path.split(".")) {
    if (typeof value !== "object" || value === null || !Object.hasOwn(value, key)) return undefined;
    value = (value as Record<string, unknown>)[key];
  }
  return value;
}
