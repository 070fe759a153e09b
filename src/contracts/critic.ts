import { z } from "zod";
import { SpeechAct } from "./council.ts";
import { SessionId, TurnId } from "./ids.ts";
import { Usage } from "./usage.ts";

export const CriticRequest = z.object({
  session_id: SessionId,
  turn_id: TurnId,
  user_message: z.string(),
  response: z.string(),
  speech_act: SpeechAct,
  /** Which rendering is judged (the evaluator loop re-renders after feedback). */
  attempt: z.number().int().min(1).default(1),
});
export type CriticRequest = z.infer<typeof CriticRequest>;

export const CriticResult = z.object({
  critic: z.string(),
  passed: z.boolean(),
  score: z.number().min(0).max(1),
  /** Why it failed, written so the voice can act on it. Empty when passed. */
  feedback: z.string(),
});
export type CriticResult = z.infer<typeof CriticResult>;

export const CriticReply = z.object({ result: CriticResult, usage: Usage.optional() });
export type CriticReply = z.infer<typeof CriticReply>;

/** Every critic's verdict on one rendering, and the critics that could not judge. */
export const CriticsVerdict = z.object({
  results: z.array(CriticResult),
  failures: z.array(
    z.object({
      critic: z.string(),
      code: z.string(),
      message: z.string(),
      /** What judged in the critic's place (e.g. "the deterministic safety check"), when something did. */
      fallback: z.string().optional(),
    }),
  ),
  usage: z.record(z.string(), Usage),
});
export type CriticsVerdict = z.infer<typeof CriticsVerdict>;
