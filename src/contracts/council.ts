import { z } from "zod";
import { AgentContext } from "./agent.ts";
import { SessionId, TurnId } from "./ids.ts";

export const Urgency = z.enum(["low", "normal", "high"]);

/** What the council wants said: the voice renders it into words. */
export const SpeechAct = z.object({
  intent: z.string().min(1).max(60),
  key_points: z.array(z.string().max(300)).max(8),
  do_not: z.array(z.string().max(300)).max(8),
});
export type SpeechAct = z.infer<typeof SpeechAct>;

export const CouncilDecision = z.object({
  speak: z.boolean(),
  urgency: Urgency,
  speech_act: SpeechAct,
  thinking: z.string().max(2000),
});
export type CouncilDecision = z.infer<typeof CouncilDecision>;

export const CouncilRequest = z.object({
  session_id: SessionId,
  turn_id: TurnId,
  context: AgentContext.extend({
    consensus: z.number().min(0).max(1),
    proposals: z.array(z.object({ source: z.string(), kind: z.string(), text: z.string() })),
  }),
});
export type CouncilRequest = z.infer<typeof CouncilRequest>;

export const SafetyCouncilRequest = z.object({
  session_id: SessionId,
  turn_id: TurnId,
  user_message: z.string(),
  reason: z.string(),
});
export type SafetyCouncilRequest = z.infer<typeof SafetyCouncilRequest>;

export const VoiceRequest = z.object({
  session_id: SessionId,
  turn_id: TurnId,
  user_message: z.string(),
  speech_act: SpeechAct,
  /** Critic feedback from an earlier attempt, appended to the prompt (evaluator loop). */
  feedback: z.array(z.string()).default([]),
});
export type VoiceRequest = z.infer<typeof VoiceRequest>;

export const VoiceReply = z.object({ text: z.string() });
export type VoiceReply = z.infer<typeof VoiceReply>;

/** The council's reply for a safety interrupt: a decision plus the words to say. */
export const SafetyCouncilReply = z.object({ decision: CouncilDecision, text: z.string() });
export type SafetyCouncilReply = z.infer<typeof SafetyCouncilReply>;
