import type { Persistence, Recipe } from "./recipe.ts";

/** The blackboard store each document's state backend names (both shapes' names). */
export const PERSISTENCE: Record<string, Persistence> = {
  ephemeral: "nats",
  memory: "nats",
  nats: "nats",
  redis: "redis",
  postgres: "postgres",
};

/** A recipe's generative provenance, from its `metadata` (the same fields in both shapes). */
export function provenanceOf(metadata: {
  generated_by?: string | undefined;
  confidence_score?: number | undefined;
  generation_rationale?: string | undefined;
  original_user_intent?: string | undefined;
}): Recipe["provenance"] {
  return {
    ...(metadata.generated_by ? { generated_by: metadata.generated_by } : {}),
    ...(metadata.confidence_score !== undefined ? { confidence_score: metadata.confidence_score } : {}),
    ...(metadata.generation_rationale ? { generation_rationale: metadata.generation_rationale } : {}),
    ...(metadata.original_user_intent ? { original_user_intent: metadata.original_user_intent } : {}),
  };
}
