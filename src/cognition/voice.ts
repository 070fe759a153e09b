import type { VoiceStreamId as StreamId, VoiceRequest, VoiceStreamMessage } from "../contracts/council.ts";

const OPENINGS: Record<string, string> = {
  repair: "I'm sorry, I got that wrong.",
  support: "That sounds hard.",
  celebrate: "Congratulations!",
  advise: "Let's work through it.",
  connect: "Thanks for telling me about them.",
  reflect: "That's a thoughtful question.",
  decline: "I can't change how I work, but I'm glad to help with what you need.",
  clarify: "I'd like to understand you better.",
  respond: "Thanks for your message.",
};

/** Turns a key point ("ask what's on your mind", "One small step…") into a sentence. */
const sentence = (point: string): string => {
  const asks = point.startsWith("ask ");
  const text = asks ? `Could you tell me ${point.slice(4).trim()}` : point.trim();
  const capitalised = text.charAt(0).toUpperCase() + text.slice(1);
  return /[.?!]$/.test(capitalised) ? capitalised : `${capitalised}${asks ? "?" : "."}`;
};

/** Quoted sentences a critic asked to remove: `Remove: "…", "…"`. */
const removals = (feedback: readonly string[]): string[] =>
  feedback.flatMap((line) => [...line.matchAll(/"([^"]+)"/g)].map((match) => match[1]!));

/** A procedure asking for short answers ("Keep answers short", "Be brief"): the offline voice says one point. */
const BRIEF = /\b(short|brief|concise|shorter)\b/i;

/**
 * The offline voice: renders a speech act as plain text, deterministically.
 * It keeps the opening and at most three points: two on a re-rendering
 * (sentences the critics asked to remove are left out), one when the user
 * asked for short answers (a procedure of procedural memory).
 */
export function renderOffline(request: VoiceRequest): string {
  const { intent, key_points } = request.speech_act;
  const opening = (Object.hasOwn(OPENINGS, intent) ? OPENINGS[intent] : undefined) ?? OPENINGS.respond!;
  const removed = new Set(removals(request.feedback));
  const points = key_points.map(sentence).filter((text) => !removed.has(text));
  const brief = request.procedures?.some((procedure) => BRIEF.test(procedure)) ?? false;
  return [opening, ...points.slice(0, brief ? 1 : request.feedback.length > 0 ? 2 : 3)].join(" ");
}

/** Splits text into the chunks a stream sends: word by word, keeping the spaces. */
export const tokenize = (text: string): string[] => text.match(/\s*\S+\s*/g) ?? [];

/** Stream messages of a rendering, as the voice sends them before its final reply. */
export type VoiceStreamPart = Exclude<VoiceStreamMessage, { type: "done" | "error" }>;

/** What a response interceptor did to a packet, reported alongside the stream. */
export type InterceptedPart = {
  type: "intercepted";
  stream_id: StreamId;
  interceptor: string;
  action: "redact" | "block";
  reason: string;
};

/**
 * The offline voice, streamed: the council's thinking on the `thinking`
 * stream, then the reply word by word on `default`. Returns the reply.
 */
export function streamOffline(request: VoiceRequest, emit: (part: VoiceStreamPart) => void): string {
  const text = renderOffline(request);
  const streams: [StreamId, string][] = [
    ["thinking", request.thinking],
    ["default", text],
  ];
  for (const [stream_id, content] of streams) {
    if (content === "") continue;
    emit({ type: "start", stream_id, content_type: "text/plain" });
    for (const delta of tokenize(content)) emit({ type: "chunk", stream_id, delta });
    emit({ type: "end", stream_id });
  }
  return text;
}
