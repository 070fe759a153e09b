import { z } from "zod";

/** Tokens one model call used. Zero in the offline model. */
export const Usage = z.object({
  prompt_tokens: z.number().int().min(0),
  completion_tokens: z.number().int().min(0),
  /**
   * The model the call ran on, as the server was asked (`gpt-4o-mini`, `text-embedding-3-small`);
   * absent in older logs and for calls that do not say: cost then prices the actor from the price table's map.
   */
  model: z.string().min(1).optional(),
});
export type Usage = z.infer<typeof Usage>;

export const noUsage = (): Usage => ({ prompt_tokens: 0, completion_tokens: 0 });

/** Two usages added up; the model is kept when both name the same one (or one names none). */
export const addUsage = (a: Usage, b: Usage): Usage => {
  const model = a.model === undefined ? b.model : b.model === undefined || b.model === a.model ? a.model : undefined;
  return {
    prompt_tokens: a.prompt_tokens + b.prompt_tokens,
    completion_tokens: a.completion_tokens + b.completion_tokens,
    ...(model === undefined ? {} : { model }),
  };
};

/**
 * The `by_actor` names of the model calls memory makes for a turn (docs/cost.md): its fact
 * extraction (a structured call on the LLM) and its embeddings (what the commit stores, and the
 * message a retrieval ranks by).
 */
export const MEMORY_EXTRACTION_ACTOR = "memory:extraction";
export const MEMORY_EMBEDDINGS_ACTOR = "memory:embeddings";

/**
 * The `by_actor` name of a compaction's model call (docs/cost.md): memory's model folding the older
 * turns into the session's summary. The offline summariser makes no call.
 */
export const COMPACTION_ACTOR = "context:compaction";

/**
 * The `by_actor` name of a worker's skill routing (docs/skills.md): the embeddings call that embeds a
 * turn's message to pick the lazy skills it loads (the trigger intents, embedded once when the worker
 * starts, belong to no session).
 */
export const SKILLS_ROUTING_ACTOR = "skills:routing";

/** A turn's cost summary: the total and each actor's share ("agent:emotion.stress", "council", "voice", "critic:safety"). */
export const TurnUsage = Usage.extend({ by_actor: z.record(z.string(), Usage) });
export type TurnUsage = z.infer<typeof TurnUsage>;
