import type { Sensors } from "../contracts/workspace.ts";

/**
 * Stage 1, fast sensors: deterministic keyword and pattern matching, no model
 * call. Each sensor is a probability in [0, 1]. Word lists follow the seed's
 * runtime core; multi-word cues are matched as phrases.
 */
const EMOTION_WORDS = new Set([
  "feel",
  "feeling",
  "happy",
  "sad",
  "angry",
  "anxious",
  "stressed",
  "tired",
  "overwhelmed",
]);
const PROBLEM_WORDS = new Set(["problem", "issue", "bug", "error", "wrong", "broken", "help", "stuck"]);
const SOCIAL_WORDS = new Set(["friend", "family", "relationship", "they", "meeting", "people"]);
const SAFETY_WORDS = new Set(["kill", "suicide", "harm", "hurt", "die", "death"]);
const SAFETY_PHRASES = ["end it", "end my life"];
/** First-person self-harm statements weigh as two cues each: on their own they trip the safety interrupt. */
const SELF_HARM_PHRASES = ["kill myself", "hurt myself", "harm myself", "end my life", "want to die", "end it all"];
const AI_WORDS = new Set(["you", "feel", "think"]);
const AI_PHRASES = ["are you", "do you"];
const HUMOR_MARKERS = ["lol", "haha", "lmao", "jk", "just kidding", "😂", "🙃"];
const RUPTURE_PHRASES = [
  "you don't understand",
  "you never",
  "that's not what i",
  "you're not listening",
  "useless",
  "forget it",
];
const INJECTION_PATTERNS = ["ignore", "pretend", "forget", "system prompt", "jailbreak"];

const countIn = (words: ReadonlySet<string>, vocabulary: ReadonlySet<string>): number => {
  let hits = 0;
  for (const word of words) if (vocabulary.has(word)) hits++;
  return hits;
};
const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
/** Whole-word phrase matchers: "end it" must not fire inside "send it". */
const matchers = new Map<string, RegExp>();
const matcher = (phrase: string): RegExp => {
  let regex = matchers.get(phrase);
  if (!regex) {
    regex = new RegExp(`(?<![\\p{L}\\p{N}_])${escapeRegExp(phrase)}(?![\\p{L}\\p{N}_])`, "u");
    matchers.set(phrase, regex);
  }
  return regex;
};
const phraseHits = (text: string, phrases: readonly string[]): number =>
  phrases.filter((phrase) => matcher(phrase).test(text)).length;

export function runFastSensors(text: string): Sensors {
  const lower = text.toLowerCase();
  const words = new Set(lower.match(/[\p{L}\p{N}_']+/gu) ?? []);
  const wordCount = text.split(/\s+/).filter(Boolean).length;
  const isShort = wordCount < 10;
  const isQuestion = text.includes("?");

  const emotionHits = countIn(words, EMOTION_WORDS);
  const problemHits = countIn(words, PROBLEM_WORDS);
  const socialHits = countIn(words, SOCIAL_WORDS);
  const safetyHits =
    countIn(words, SAFETY_WORDS) + phraseHits(lower, SAFETY_PHRASES) + 2 * phraseHits(lower, SELF_HARM_PHRASES);
  const aiHits = countIn(words, AI_WORDS) + phraseHits(lower, AI_PHRASES);
  const humorHits = phraseHits(lower, HUMOR_MARKERS);

  return {
    vulnerability: emotionHits > 0 ? Math.min(0.3 + emotionHits * 0.2, 0.9) : 0,
    advice_requested: problemHits > 0 && isQuestion ? Math.min(0.4 + problemHits * 0.15, 0.9) : 0,
    relational_bid: socialHits > 0 && isShort ? Math.min(0.3 + socialHits * 0.2, 0.8) : 0,
    ai_feelings_probe: isQuestion && aiHits >= 2 ? 0.6 : 0,
    // Joking about something painful: humour markers next to emotion or safety words.
    humor_masking: humorHits > 0 && emotionHits + safetyHits > 0 ? Math.min(0.4 + humorHits * 0.2, 0.8) : 0,
    rupture: Math.min(phraseHits(lower, RUPTURE_PHRASES) * 0.5, 0.9),
    ambiguity: isShort && emotionHits === 0 && problemHits === 0 ? 0.5 : 0,
    safety_risk: safetyHits > 0 ? Math.min(0.5 + safetyHits * 0.2, 1) : 0,
    prompt_injection: phraseHits(lower, INJECTION_PATTERNS) > 0 ? 0.8 : 0,
  };
}

/** Above this safety_risk the turn skips the cognitive stages for the safety council. */
export const SAFETY_INTERRUPT_THRESHOLD = 0.8;
