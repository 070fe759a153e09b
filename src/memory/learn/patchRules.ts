/**
 * The offline extractor's procedural patterns: a user's standing instruction about how to be
 * answered ("keep your answers short", "answer in Spanish", "don't use emojis") to the patch it
 * states, keyed by its label.
 */
import type { ProceduralPatch } from "../procedural/patch.ts";
import { capitalise, normalise, sentencesOf, stripLead } from "./clauses.ts";
import { slugOf } from "./topics.ts";

// Each pattern must match a whole piece of a sentence once its politeness ("please", "could you",
// "from now on", …) is stripped: "answer in Spanish" is an instruction, "explain this in Spanish"
// and "the answer in Spanish was wrong" are not.

/** Politeness and framing before the instruction itself: stripped, as many as there are. */
const LEAD =
  /^(?:please|pls|kindly|from\s+now\s+on|going\s+forward|in\s+(?:the\s+)?future|henceforth|always|(?:can|could|would|will)\s+you(?:\s+please)?|I(?:'d|\s+would)\s+(?:like|prefer|love)\s+(?:it\s+if\s+)?(?:that\s+)?you(?:\s+to)?|I\s+(?:want|need)\s+you\s+to|you\s+should|make\s+sure\s+(?:to|you)|try\s+to|remember\s+to)\b[\s,:]*/i;
/** … and after it (with the end punctuation), as many as there are. */
const TRAIL =
  /[\s.!?]+$|[\s,]+(?:please|from\s+now\s+on|going\s+forward|in\s+(?:the\s+)?future|for\s+me|thanks|thank\s+you|with\s+me|all\s+the\s+time|always|anymore|any\s+more|ok|okay)$/i;

const REPLIES = String.raw`(?:(?:your|the|all|my|all\s+your|all\s+the)\s+)?(?:answers?|replies|reply|responses?|messages?|explanations?)`;
const DEGREE = String.raw`(?:(?:a\s+bit|a\s+little|much|way|really|very|more)\s+)?`;
const SHORT = String.raw`(?:short|shorter|brief|briefer|concise|succinct|to\s+the\s+point)`;
const LONG = "(?:detailed|longer|thorough|in-depth)";
const WANT = String.raw`(?:(?:give\s+me|use|write|I\s+(?:want|prefer|like))\s+)?`;
const LANGUAGES =
  "english|spanish|french|german|portuguese|italian|dutch|japanese|chinese|mandarin|cantonese|korean|russian|arabic|hindi|polish|swedish|norwegian|danish|finnish|turkish|greek|catalan|basque|galician|ukrainian|czech|hebrew|vietnamese|thai|indonesian|romanian|hungarian|irish|welsh|latin|esperanto";
const TONES = "formal|casual|informal|friendly|polite|direct|blunt|professional|playful|serious|warm";
const AVOIDABLE = String.raw`emojis?|emoticons|smileys|jargon|technical\s+(?:terms|jargon|language|words)|bullet\s+points|bullets|markdown|tables|lists|headings|headers|exclamation\s+(?:marks|points)|slang|swear\s+words|swearing|profanity|abbreviations|acronyms|code\s+blocks|my\s+name|filler|em\s+dashes|emdashes|hashtags|all\s+caps|caps`;
const STOP = String.raw`(?:don't|do\s+not|never|stop|quit)`;
const USE = "(?:use|using|include|including|add|adding|put|putting|send|sending)";
const SOME = String.raw`(?:(?:any|so\s+many|more|those|the|all\s+(?:the|those))\s+)?`;

type PatchRule = { pattern: RegExp; patch: (match: RegExpExecArray) => ProceduralPatch | undefined };

const length = (value: "short" | "detailed"): ProceduralPatch => ({
  label: "style.length",
  instruction: value === "short" ? "Keep answers short" : "Give detailed answers",
  data: { value },
});

const TONE_OPPOSITE: Readonly<Record<string, string>> = { formal: "casual", casual: "formal", informal: "formal" };
const tone = (said: string, less = false): ProceduralPatch | undefined => {
  const word = said.toLowerCase();
  const value = less ? TONE_OPPOSITE[word] : word === "informal" ? "casual" : word;
  return value ? { label: "style.tone", instruction: `Use a ${value} tone`, data: { value } } : undefined;
};

const avoid = (said: string | undefined): ProceduralPatch | undefined => {
  const thing = (said ?? "").toLowerCase().replace(/\s+/g, " ").trim();
  const slug = slugOf(thing.replace(/['"]/g, ""), 2);
  if (!slug) return undefined;
  return {
    label: `style.avoid.${slug}`,
    instruction: thing.endsWith("ing") ? `Avoid ${thing}` : `Don't use ${thing}`,
    data: { value: thing },
  };
};

const rule = (source: string, patch: PatchRule["patch"]): PatchRule => ({
  pattern: new RegExp(`^${source}$`, "i"),
  patch,
});

const PATCH_RULES: PatchRule[] = [
  rule(String.raw`(?:keep|make)\s+${REPLIES}\s+${DEGREE}${SHORT}`, () => length("short")),
  rule(String.raw`be\s+(?:more\s+)?(?:brief|concise|succinct)`, () => length("short")),
  rule(String.raw`${WANT}(?:short|shorter|brief|briefer|concise)\s+${REPLIES}`, () => length("short")),
  rule(String.raw`(?:answer|reply|respond)\s+(?:more\s+)?(?:briefly|concisely|succinctly|in\s+short)`, () =>
    length("short"),
  ),
  rule(String.raw`(?:be\s+less\s+|don't\s+be\s+so\s+|do\s+not\s+be\s+so\s+)(?:verbose|wordy|long-winded)`, () =>
    length("short"),
  ),
  rule(String.raw`be\s+(?:more\s+)?(?:detailed|thorough)`, () => length("detailed")),
  rule(String.raw`(?:keep|make)\s+${REPLIES}\s+${DEGREE}${LONG}`, () => length("detailed")),
  rule(String.raw`${WANT}(?:more\s+)?${LONG}\s+${REPLIES}`, () => length("detailed")),
  rule(String.raw`(?:answer|reply|respond|explain\s+things)\s+in\s+(?:more\s+)?detail`, () => length("detailed")),
  rule(
    String.raw`(?:answer|reply|respond|talk|speak|write|chat|text)(?:\s+(?:to\s+)?me)?(?:\s+only)?\s+in\s+(${LANGUAGES})(?:\s+only)?`,
    (m) => language(m[1]),
  ),
  rule(String.raw`(?:use|switch\s+to|speak|let's\s+(?:speak|talk)(?:\s+in)?)\s+(${LANGUAGES})(?:\s+only)?`, (m) =>
    language(m[1]),
  ),
  rule(String.raw`be\s+${DEGREE}(less\s+)?(${TONES})`, (m) => tone(m[2] ?? "", m[1] !== undefined)),
  rule(String.raw`(?:use|keep|take)\s+a\s+(?:more\s+)?(${TONES})\s+tone`, (m) => tone(m[1] ?? "")),
  rule(String.raw`${STOP}\s+${USE}\s+${SOME}(${AVOIDABLE})(?:\s+(?:in|into)\s+${REPLIES})?`, (m) => avoid(m[1])),
  rule(String.raw`${STOP}\s+${USE}\s+${SOME}([a-z][a-z' -]{0,39}?)\s+(?:in|into)\s+${REPLIES}`, (m) => avoid(m[1])),
  rule(String.raw`avoid(?:\s+using)?\s+${SOME}(${AVOIDABLE})(?:\s+(?:in|into)\s+${REPLIES})?`, (m) => avoid(m[1])),
  rule(String.raw`no\s+(?:more\s+)?(${AVOIDABLE})`, (m) => avoid(m[1])),
];

function language(said: string | undefined): ProceduralPatch | undefined {
  const value = (said ?? "").toLowerCase();
  return value
    ? { label: "style.language", instruction: `Answer in ${capitalise(value)}`, data: { value } }
    : undefined;
}

/** A piece of a sentence without its lead-in words, politeness and end punctuation. */
function bare(piece: string): string {
  let rest = stripLead(piece);
  for (let match = LEAD.exec(rest); match && match[0].length > 0; match = LEAD.exec(rest)) {
    rest = stripLead(rest.slice(match[0].length));
  }
  for (let match = TRAIL.exec(rest); match && match[0].length > 0; match = TRAIL.exec(rest)) {
    rest = rest.slice(0, match.index);
  }
  return rest.trim();
}

/**
 * The patches a user message states: each sentence (questions too: "could you answer in Spanish?"
 * asks for a standing change) split at commas and "and"/"but"/"also", each piece matched whole.
 * One patch per label, the last said winning.
 *
 * - `style.length`: "keep (your) answers short/brief/concise", "be brief", "shorter answers",
 *   "answer briefly", "be less verbose" → short; "be more detailed", "give me longer answers",
 *   "answer in more detail" → detailed.
 * - `style.language`: "answer/reply/talk (to me) in Spanish", "use/switch to/speak Spanish".
 * - `style.tone`: "be more formal/casual/friendly/direct…", "be less formal", "use a formal tone".
 * - `style.avoid.<thing>`: "don't/never/stop use (any) emojis/jargon/bullet points/markdown/…",
 *   "don't use X in your answers" (any X), "avoid jargon", "no more emojis".
 */
export function patchesOf(userMessage: string): ProceduralPatch[] {
  const byLabel = new Map<string, ProceduralPatch>();
  for (const sentence of sentencesOf(normalise(userMessage))) {
    for (const piece of sentence.split(/\s*[,;:]\s*|\s+(?:and|but|also|then|plus)\s+/i)) {
      const text = bare(piece);
      if (!text) continue;
      for (const { pattern, patch } of PATCH_RULES) {
        const match = pattern.exec(text);
        const found = match ? patch(match) : undefined;
        if (!found) continue;
        byLabel.delete(found.label);
        byLabel.set(found.label, found);
        break;
      }
    }
  }
  return [...byLabel.values()];
}
