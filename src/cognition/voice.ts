import type { VoiceRequest } from "../contracts/council.ts";

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

/** Turns "slow down and name one small next step" into a sentence. */
const sentence = (point: string): string => {
  const text = point.replace(/^ask /, "Could you tell me ").trim();
  const capitalised = text.charAt(0).toUpperCase() + text.slice(1);
  return /[.?!]$/.test(capitalised) ? capitalised : `${capitalised}${point.startsWith("ask ") ? "?" : "."}`;
};

/**
 * The offline voice: renders a speech act as plain text, deterministically.
 * Critic feedback (from an earlier attempt) shortens the reply to its opening
 * and first point.
 */
export function renderOffline(request: VoiceRequest): string {
  const { intent, key_points } = request.speech_act;
  const opening = OPENINGS[intent] ?? OPENINGS.respond!;
  const points = request.feedback.length > 0 ? key_points.slice(0, 1) : key_points.slice(0, 3);
  return [opening, ...points.map(sentence)].join(" ");
}
