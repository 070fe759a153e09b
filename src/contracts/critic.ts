import { z } from "zod";
import { SpeechAct } from "./council.ts";
import { SessionId, TurnId } from "./ids.ts";

export const CriticRequest = z.object({
  session_id: SessionId,
  turn_id: TurnId,
  user_message: z.string(),
  response: z.string(),
  speech_act: SpeechAct,
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

export const CriticsReply = z.object({ results: z.array(CriticResult) });
export type CriticsReply = z.infer<typeof CriticsReply>;
