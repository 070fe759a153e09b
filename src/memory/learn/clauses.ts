/** Text helpers of the offline extractor: sentences, clauses, lead-in words, cutting. */

/** The longest fact or thread text, in characters: memory keeps statements, not paragraphs. */
export const ITEM_CHARS = 120;
// Text helpers.

/** Straight apostrophes and quotes, so patterns need one spelling of "don't". */
export function normalise(text: string): string {
  return text.replace(/[\u2018\u2019\u02bc]/g, "'").replace(/[\u201c\u201d]/g, '"');
}

/** Sentences, each with its end punctuation ("?" marks a question). */
export function sentencesOf(text: string): string[] {
  return (text.match(/[^.!?\n]+[.!?]*/g) ?? []).map((sentence) => sentence.trim()).filter(Boolean);
}

/** Clauses of a sentence: split where a new statement starts ("…, so I …", "… and my sister …", "… but …"). */
export function clausesOf(sentence: string): string[] {
  return sentence
    .split(
      /\s*[,;]\s*(?:and|but|so|because|though|although|while)\s+|\s+(?:but|because|although|though|so)\s+|\s*[,;]\s*(?=(?:I|my)\b)|\s+and\s+(?=(?:I|my)\b)/i,
    )
    .map((clause) => clause.trim())
    .filter(Boolean);
}

const LEAD =
  /^(?:well|so|and|but|also|actually|yeah|yes|oh|ok|okay|hi|hey|hello|btw|by\s+the\s+way|anyway|now|honestly|right|fyi)\b[\s,:-]*/i;

/** A clause without its lead-in words: "Well, also, I live in Porto" → "I live in Porto". */
export function stripLead(clause: string): string {
  let rest = clause.trim();
  for (let match = LEAD.exec(rest); match && match[0].length > 0; match = LEAD.exec(rest)) {
    rest = rest.slice(match[0].length);
  }
  return rest;
}

export function capitalise(word: string): string {
  return word.charAt(0).toUpperCase() + word.slice(1);
}

export function cut(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1).trimEnd()}…`;
}

export function unique<T>(values: readonly T[]): T[] {
  return [...new Set(values)];
}

/** One item per key, the last said winning, in order of each key's first appearance. */
export function lastPerKey<T extends { key: string }>(items: readonly T[]): T[] {
  const byKey = new Map<string, T>();
  for (const item of items) byKey.set(item.key, item);
  return [...byKey.values()];
}
