import { z } from "zod";
import { AgentContext } from "./agent.ts";
import { SessionId, TurnId } from "./ids.ts";
import { Usage } from "./usage.ts";

export const Urgency = z.enum(["low", "normal", "high"]);

/** Most characters of one key point or do_not rule of a speech act. */
export const MAX_SPEECH_POINT_CHARS = 300;

/** What the council wants said: the voice renders it into words. */
export const SpeechAct = z.object({
  intent: z.string().min(1).max(60),
  key_points: z.array(z.string().max(MAX_SPEECH_POINT_CHARS)).max(8),
  do_not: z.array(z.string().max(MAX_SPEECH_POINT_CHARS)).max(8),
});
export type SpeechAct = z.infer<typeof SpeechAct>;

export const CouncilDecision = z.object({
  speak: z.boolean(),
  urgency: Urgency,
  speech_act: SpeechAct,
  thinking: z.string().max(2000),
});
export type CouncilDecision = z.infer<typeof CouncilDecision>;

/**
 * On a reply the deterministic council or voice gave in place of the one asked, which could not
 * answer (its model's answer unusable, a model or worker fault, no time left): what went wrong.
 * The turn names it in a `council_fallback` or `voice_fallback` warning.
 */
export const ReplyFallback = z.object({ code: z.string(), message: z.string() });
export type ReplyFallback = z.infer<typeof ReplyFallback>;

export const CouncilReply = z.object({
  decision: CouncilDecision,
  usage: Usage.optional(),
  fallback: ReplyFallback.optional(),
});
export type CouncilReply = z.infer<typeof CouncilReply>;

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
  /** The council's reasoning, streamed on the `thinking` stream before the reply. */
  thinking: z.string().max(2000).default(""),
  /** Critic feedback from an earlier attempt, appended to the prompt (evaluator loop). */
  feedback: z.array(z.string()).default([]),
  /** 1 for the first rendering, 2 and on for re-renderings after critic feedback. */
  attempt: z.number().int().min(1).default(1),
  /** How the user asked to be answered (procedural memory: "Keep answers short", "Answer in Spanish"). */
  procedures: z.array(z.string().max(200)).max(20).optional(),
});
export type VoiceRequest = z.infer<typeof VoiceRequest>;

export const VoiceReply = z.object({ text: z.string(), usage: Usage.optional(), fallback: ReplyFallback.optional() });
export type VoiceReply = z.infer<typeof VoiceReply>;

/** Stream ids of the voice: its reasoning, and the reply the user reads. */
/** The voice's two streams: its thinking and the reply. */
export const VoiceStreamId = z.enum(["thinking", "default"]);
export type VoiceStreamId = z.infer<typeof VoiceStreamId>;

/** A stream id in the event log: one of the voice's, or an agent's `<agent_id>:<name>`. */
export const StreamId = z.string().min(1).max(120);
export type StreamId = z.infer<typeof StreamId>;

/**
 * What the voice sends while rendering, as successive replies to one request
 * (multiplexed streams): `start` before a stream's chunks, `chunk`s, `end`,
 * then one `done` with the whole text; an empty message closes the exchange.
 */
export const VoiceStreamMessage = z.discriminatedUnion("type", [
  z.object({ type: z.literal("start"), stream_id: VoiceStreamId, content_type: z.string() }),
  z.object({ type: z.literal("chunk"), stream_id: VoiceStreamId, delta: z.string() }),
  z.object({ type: z.literal("end"), stream_id: VoiceStreamId }),
  z.object({ type: z.literal("done"), text: z.string(), usage: Usage.optional() }),
  z.object({ type: z.literal("error"), code: z.string(), message: z.string() }),
]);
export type VoiceStreamMessage = z.infer<typeof VoiceStreamMessage>;

/** The council's reply for a safety interrupt: a decision plus the words to say. */
export const SafetyCouncilReply = z.object({ decision: CouncilDecision, text: z.string() });
export type SafetyCouncilReply = z.infer<typeof SafetyCouncilReply>;
