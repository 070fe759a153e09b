import type { Sensors } from "../contracts/workspace.ts";
import { injectionCue } from "./injection.ts";

/**
 * Stage 1, fast sensors: deterministic keyword matching, no model call. Each
 * sensor is a probability in [0, 1].
 *
 * By default eight of the nine are the reference sensors, a Python
 * `run_fast_sensors` (docs/SENSORS.md, docs/glossary.md) transcribed exactly:
 * the same word lists, tokenisation, formulas and caps, including its quirks
 * (multi-word entries in word sets that can never match, `humor_masking` and
 * `rupture` always 0). The ninth, `prompt_injection`, reads its trigger words
 * in context (./injection.ts): the reference's substring test declined
 * "I keep forgetting to call the bank". Each other deviation we consider
 * better is a {@link SensorOptions} flag, off by default; docs/SENSORS.md
 * gives the reasons.
 */

// The reference's sets, verbatim. "end it", "are you" and "do you" are entries of its word sets; a set of single
// words never contains them, so by default they never count (see the `safetyPhrases` and `aiProbePhrases` options).
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
const SAFETY_WORDS = new Set(["kill", "suicide", "harm", "hurt", "die", "death", "end it"]);
const AI_WORDS = new Set(["you", "feel", "think", "are you", "do you"]);
/** The reference's injection test (the `injectionSubstrings` option); by default injection is read in context. */
const INJECTION_PATTERNS = ["ignore", "pretend", "forget", "system prompt", "jailbreak"];

// Used only by options.
const SAFETY_PHRASES = ["end it", "end my life"];
const SELF_HARM_PHRASES = ["kill myself", "hurt myself", "harm myself", "end my life", "want to die", "end it all"];
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

/**
 * Deviations from the reference sensors, each off by default (the reference
 * behaviour), and `injectionSubstrings`, which brings the reference's
 * injection test back. {@link REFINED_SENSORS} turns every deviation on,
 * {@link REFERENCE_SENSORS} is the reference exactly.
 */
export interface SensorOptions {
  /**
   * Count "end it" and "end my life" as safety phrases, and first-person
   * self-harm phrases ("kill myself", "hurt myself", "harm myself", "end my
   * life", "want to die", "end it all") as two cues each. Why: by default
   * "I want to hurt myself" scores 0.7 and does not trip the safety interrupt
   * (> 0.8); with this option one such statement does. The reference's "end it"
   * entry can never match its word set; as a phrase it does.
   */
  safetyPhrases?: boolean;
  /**
   * Count "are you" and "do you" as AI cues. Why: the reference lists them among its
   * AI words but matches single words only, so they never count; "Are you
   * real?" then has one cue and is not a probe.
   */
  aiProbePhrases?: boolean;
  /**
   * Score `prompt_injection` as the reference does: 0.8 when "ignore",
   * "pretend", "forget", "system prompt" or "jailbreak" occurs anywhere, even
   * inside a word. Off by default, when the message must address the
   * assistant about its instructions, rules, prompt or persona
   * ("ignore previous instructions", "pretend you have no rules"): the
   * substring test declined "I keep forgetting to call the bank", "please
   * ignore the typo above", "unforgettable". For comparing with the reference.
   */
  injectionSubstrings?: boolean;
  /**
   * Compute `humor_masking`: humour markers (lol, haha, lmao, jk, just
   * kidding, 😂, 🙃) next to emotion or safety cues, 0.4 + 0.2 per marker, at
   * most 0.8. Why: the reference names the sensor but always reports 0.
   */
  humorMasking?: boolean;
  /**
   * Compute `rupture`: frustration with the assistant ("you don't understand",
   * "you never", "useless", "forget it", …), 0.5 per phrase, at most 0.9. Why:
   * the reference names the sensor but always reports 0, so the repair agents it
   * triggers never fire.
   */
  rupture?: boolean;
}

/**
 * The default: every option off. The reference sensors, but for
 * `prompt_injection`, read in context.
 */
export const SEED_SENSORS: Readonly<Required<SensorOptions>> = Object.freeze({
  safetyPhrases: false,
  aiProbePhrases: false,
  injectionSubstrings: false,
  humorMasking: false,
  rupture: false,
});

/** The reference sensors exactly, injection substrings included: to compare with the reference's values. */
export const REFERENCE_SENSORS: Readonly<Required<SensorOptions>> = Object.freeze({
  ...SEED_SENSORS,
  injectionSubstrings: true,
});

/** Every deviation on: the sensors as this project refined them (injection read in context). */
export const REFINED_SENSORS: Readonly<Required<SensorOptions>> = Object.freeze({
  safetyPhrases: true,
  aiProbePhrases: true,
  injectionSubstrings: false,
  humorMasking: true,
  rupture: true,
});

const countIn = (words: ReadonlySet<string>, vocabulary: ReadonlySet<string>): number => {
  let hits = 0;
  for (const word of words) if (vocabulary.has(word)) hits++;
  return hits;
};
const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
/** Whole-word phrase matchers (options only): "end it" must not fire inside "send it". */
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

/** Python's `re.findall(r'\b\w+\b', s)`: runs of letters, digits and underscores (apostrophes split words). */
const WORD = /[\p{L}\p{N}_]+/gu;
/** Python's `str.split()` separators (`str.isspace`), which differ from JavaScript's `\s` at the edges. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: \x1c-\x1f and \x85 are whitespace to Python.
const PY_WHITESPACE = /[\t\n\v\f\r\x1c-\x1f \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+/u;

/**
 * The nine sensors for one user message. Without `options`, the reference
 * formulas but for `prompt_injection` (read in context); see
 * {@link SensorOptions} for the deviations.
 */
export function runFastSensors(text: string, options: SensorOptions = SEED_SENSORS): Sensors {
  const lower = text.toLowerCase();
  const words = new Set(lower.match(WORD) ?? []);
  const wordCount = text.split(PY_WHITESPACE).filter(Boolean).length;
  const isShort = wordCount < 10;
  const isQuestion = text.includes("?");

  const emotionHits = countIn(words, EMOTION_WORDS);
  const problemHits = countIn(words, PROBLEM_WORDS);
  const socialHits = countIn(words, SOCIAL_WORDS);
  let safetyHits = countIn(words, SAFETY_WORDS);
  if (options.safetyPhrases) safetyHits += phraseHits(lower, SAFETY_PHRASES) + 2 * phraseHits(lower, SELF_HARM_PHRASES);
  let aiHits = countIn(words, AI_WORDS);
  if (options.aiProbePhrases) aiHits += phraseHits(lower, AI_PHRASES);
  const injected = options.injectionSubstrings
    ? INJECTION_PATTERNS.some((pattern) => lower.includes(pattern))
    : injectionCue(text) !== undefined;
  const humorHits = options.humorMasking ? phraseHits(lower, HUMOR_MARKERS) : 0;

  return {
    vulnerability: emotionHits > 0 ? Math.min(0.3 + emotionHits * 0.2, 0.9) : 0,
    advice_requested: problemHits > 0 && isQuestion ? Math.min(0.4 + problemHits * 0.15, 0.9) : 0,
    relational_bid: socialHits > 0 && isShort ? Math.min(0.3 + socialHits * 0.2, 0.8) : 0,
    ai_feelings_probe: isQuestion && aiHits >= 2 ? 0.6 : 0,
    // Joking about something painful: humour markers next to emotion or safety words.
    humor_masking: humorHits > 0 && emotionHits + safetyHits > 0 ? Math.min(0.4 + humorHits * 0.2, 0.8) : 0,
    rupture: options.rupture ? Math.min(phraseHits(lower, RUPTURE_PHRASES) * 0.5, 0.9) : 0,
    ambiguity: isShort && emotionHits === 0 && problemHits === 0 ? 0.5 : 0,
    safety_risk: safetyHits > 0 ? Math.min(0.5 + safetyHits * 0.2, 1) : 0,
    prompt_injection: injected ? 0.8 : 0,
  };
}

/** Above this safety_risk the turn skips the cognitive stages for the safety council (the reference's `> 0.8`). */
export const SAFETY_INTERRUPT_THRESHOLD = 0.8;
