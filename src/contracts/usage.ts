import { z } from "zod";

/** Tokens one model call used. Zero in the offline model. */
export const Usage = z.object({
  prompt_tokens: z.number().int().min(0),
  completion_tokens: z.number().int().min(0),
});
export type Usage = z.infer<typeof Usage>;

export const noUsage = (): Usage => ({ prompt_tokens: 0, completion_tokens: 0 });

export const addUsage = (a: Usage, b: Usage): Usage => ({
  prompt_tokens: a.prompt_tokens + b.prompt_tokens,
  completion_tokens: a.completion_tokens + b.completion_tokens,
});

/** A turn's cost summary: the total and each actor's share ("agent:emotion.stress", "council", "voice", "critic:safety"). */
export const TurnUsage = Usage.extend({ by_actor: z.record(z.string(), Usage) });
export type TurnUsage = z.infer<typeof TurnUsage>;
