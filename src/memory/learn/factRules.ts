/**
 * The offline extractor's fact patterns: a first-person clause to the fact it states, keyed by its slot.
 */
import { capitalise, cut, ITEM_CHARS } from "./clauses.ts";
import type { LearnedItem } from "./extract.ts";
import { slugOf } from "./topics.ts";

// Fact patterns. Each is anchored at the start of a clause whose lead-in words ("well", "also",
// "now", …) were stripped, so "if I lived in Paris" or "what if I work nights" state nothing.

/** Adverbs allowed between "I" and the verb: "I now work", "I still live", "I really love". */
const ADV = String.raw`(?:(?:now|currently|still|actually|also|really|just|mostly|usually|only|totally|absolutely)\s+)*`;
const I_AM = String.raw`I(?:'m|\s+am)`;

const RELATIONS = String.raw`best\s+friend|sister|brother|mother|mom|mum|father|dad|son|daughter|wife|husband|partner|boyfriend|girlfriend|cousin|aunt|uncle|grandmother|grandma|grandfather|grandpa|dog|cat`;
const RELATION_CANON: Readonly<Record<string, string>> = {
  mom: "mother",
  mum: "mother",
  dad: "father",
  grandma: "grandmother",
  grandpa: "grandfather",
};
const PARTNERS: ReadonlySet<string> = new Set(["wife", "husband", "partner", "boyfriend", "girlfriend"]);
const PETS: ReadonlySet<string> = new Set(["dog", "cat"]);

/** Words after "I'm a" that are not about who the user is: "I'm a bit tired". */
const NOT_IDENTITY = /^(?:bit|little|lot|tad|few|kind|sort|bit of|little bit)\b/i;
/** Capitalised words after "I'm" that are not names: "I'm Fine." */
const NOT_NAMES: ReadonlySet<string> = new Set(
  "fine good great okay ok sorry here back done ready tired not so very just sure glad happy sad bored home out in on".split(
    " ",
  ),
);
const COUNTS: Readonly<Record<string, number>> = { a: 1, an: 1, one: 1, two: 2, three: 3, four: 4, five: 5 };

type FactRule = { pattern: RegExp; fact: (match: RegExpExecArray) => Omit<LearnedItem, "topics"> | undefined };

const FACT_RULES: FactRule[] = [
  {
    pattern: /^(?:my\s+name\s+is|my\s+name's|call\s+me)\s+([A-Za-z][\w'-]*)/i,
    fact: (m) => ({ text: `is called ${capitalise(m[1] ?? "")}`, key: "name" }),
  },
  {
    // Case-sensitive name: "I'm Tom" is a name, "I'm tired" is not.
    pattern: /^[Ii](?:'m|\s+am)\s+([A-Z][a-z'-]+)[.!]*$/,
    fact: (m) => (NOT_NAMES.has((m[1] ?? "").toLowerCase()) ? undefined : { text: `is called ${m[1]}`, key: "name" }),
  },
  {
    pattern: new RegExp(String.raw`^${I_AM}\s+(\d{1,3})(?:\s+years?\s+old)?(?:\s|[.!]|$)`, "i"),
    fact: (m) => ({ text: `is ${m[1]} years old`, key: "age" }),
  },
  {
    pattern: new RegExp(
      String.raw`^(?:I\s+${ADV}(?:no\s+longer\s+work|quit\s+my\s+job|lost\s+my\s+job|stopped\s+working)|${I_AM}\s+${ADV}(?:unemployed|out\s+of\s+work))\b`,
      "i",
    ),
    fact: () => ({ text: "no longer works", key: "work" }),
  },
  {
    pattern: new RegExp(String.raw`^(?:I\s+${ADV}(?:have\s+)?retired|${I_AM}\s+${ADV}retired)\b`, "i"),
    fact: () => ({ text: "is retired", key: "work" }),
  },
  {
    pattern: new RegExp(String.raw`^I\s+${ADV}work\s+(.+)`, "i"),
    fact: (m) => object(m[1], (thing) => ({ text: `works ${thing}`, key: "work" })),
  },
  {
    // "I'm working on my thesis" is an activity, not a job.
    pattern: new RegExp(String.raw`^${I_AM}\s+${ADV}working\s+(?!on\b|out\b|through\b|it\b|this\b|that\b)(.+)`, "i"),
    fact: (m) => object(m[1], (thing) => ({ text: `works ${thing}`, key: "work" })),
  },
  {
    // With an article only: "my job is stressful" is a feeling, not what the job is.
    pattern: /^my\s+(?:job|work)\s+is\s+((?:a|an)\s+.+)/i,
    fact: (m) => object(m[1], (thing) => ({ text: `works as ${thing}`, key: "work" })),
  },
  {
    pattern: new RegExp(String.raw`^(?:I|${I_AM})\s+${ADV}(?:live|living)\s+(in|at|near)\s+(.+)`, "i"),
    fact: (m) => object(m[2], (place) => ({ text: `lives ${m[1]?.toLowerCase()} ${place}`, key: "home" })),
  },
  {
    pattern: new RegExp(String.raw`^(?:I|${I_AM})\s+${ADV}(?:live|living)\s+with\s+(.+)`, "i"),
    fact: (m) => object(m[1], (who) => ({ text: `lives with ${who}`, key: "household" })),
  },
  {
    pattern: new RegExp(String.raw`^I(?:\s+have|'ve)?\s+${ADV}(?:just\s+)?moved\s+to\s+(.+)`, "i"),
    fact: (m) => object(m[1], (place) => ({ text: `lives in ${place}`, key: "home" })),
  },
  {
    pattern: new RegExp(String.raw`^${I_AM}\s+(?:originally\s+)?from\s+(.+)`, "i"),
    fact: (m) => object(m[1], (place) => ({ text: `is from ${place}`, key: "origin" })),
  },
  {
    pattern: new RegExp(
      String.raw`^my\s+(${RELATIONS})(?:'s\s+name\s+is|\s+is\s+called|\s+is\s+named|'s\s+called|\s+(is))\s+([\w'-]+)([\s\S]*)$`,
      "i",
    ),
    fact: (m) => {
      const [, relation = "", plainIs, name = "", rest = ""] = m;
      // After a plain "is", only a capitalised word alone is a name: "my sister is Ana", not "my sister is sick".
      if (plainIs && (!/^[A-Z]/.test(name) || !/^\s*(?:[.!,;]|$)/.test(rest))) return undefined;
      const rel = relationOf(relation);
      return { text: `has a ${rel.word} called ${capitalise(name)}`, key: rel.key };
    },
  },
  {
    pattern: new RegExp(
      String.raw`^I(?:\s+${ADV}have(?:\s+got)?|'ve\s+got|\s+got)\s+(a|an|one|two|three|four|five)\s+(${RELATIONS})(?:s)?\b(?:\s+(?:called|named)\s+([\w'-]+))?`,
      "i",
    ),
    fact: (m) => {
      const [, countWord = "", relation = "", name] = m;
      const count = COUNTS[countWord.toLowerCase()] ?? 1;
      const rel = relationOf(relation);
      if (count > 1) return { text: `has ${countWord.toLowerCase()} ${rel.word}s`, key: rel.key };
      return { text: `has a ${rel.word}${name ? ` called ${capitalise(name)}` : ""}`, key: rel.key };
    },
  },
  {
    pattern: new RegExp(
      String.raw`^I\s+${ADV}(?:don't|do\s+not|never)\s+(?:really\s+)?(?:like|love|enjoy)\s+(.+)`,
      "i",
    ),
    fact: (m) => liking("dislikes", m[1]),
  },
  {
    pattern: new RegExp(
      String.raw`^I\s+${ADV}(like|love|enjoy|adore|hate|dislike|can't\s+stand|cannot\s+stand)\s+(.+)`,
      "i",
    ),
    fact: (m) => liking(LIKING_VERBS[(m[1] ?? "").toLowerCase().replace(/\s+/g, " ")] ?? "likes", m[2]),
  },
  {
    pattern: new RegExp(String.raw`^${I_AM}\s+${ADV}(a|an)\s+(.+)`, "i"),
    fact: (m) => {
      const thing = m[2] ?? "";
      if (NOT_IDENTITY.test(thing)) return undefined;
      return object(thing, (what) => {
        const slug = slugOf(what, 2);
        return slug ? { text: `is ${m[1]?.toLowerCase()} ${what}`, key: `is.${slug}` } : undefined;
      });
    },
  },
];

const LIKING_VERBS: Readonly<Record<string, string>> = {
  like: "likes",
  love: "loves",
  enjoy: "enjoys",
  adore: "loves",
  hate: "hates",
  dislike: "dislikes",
  "can't stand": "hates",
  "cannot stand": "hates",
};

/** The first fact rule that matches a clause. */
export function factOf(clause: string): Omit<LearnedItem, "topics"> | undefined {
  for (const rule of FACT_RULES) {
    const match = rule.pattern.exec(clause);
    if (!match) continue;
    const fact = rule.fact(match);
    if (fact) return fact;
  }
  return undefined;
}

/** A liking fact, keyed by what is liked ("I love you" has nothing to key on and states no fact). */
function liking(verb: string, thing: string | undefined): Omit<LearnedItem, "topics"> | undefined {
  return object(thing, (what) => {
    const slug = slugOf(what);
    return slug ? { text: `${verb} ${what}`, key: `likes.${slug}` } : undefined;
  });
}

function relationOf(relation: string): { word: string; key: string } {
  const said = relation.toLowerCase().replace(/\s+/g, " ");
  const word = RELATION_CANON[said] ?? said;
  if (word === "best friend") return { word, key: "friends.best" };
  if (PARTNERS.has(word)) return { word, key: "partner" };
  if (PETS.has(word)) return { word, key: `pets.${word}` };
  return { word, key: `family.${word}` };
}

/** The object of a statement, tidied, given to `build`; nothing when it is empty. */
function object<T>(raw: string | undefined, build: (thing: string) => T | undefined): T | undefined {
  const thing = tidy(raw ?? "");
  return thing ? build(thing) : undefined;
}

const TRAILING_TIME =
  /\s+(?:(?:last|this|next)\s+(?:year|month|week|weekend|summer|winter|spring|autumn|fall)|(?:a|one|two|three|few|\d+)\s+(?:\w+\s+)?(?:days?|weeks?|months?|years?)\s+ago|yesterday|today|recently|lately|now|these\s+days|since\s+.+|in\s+(?:19|20)\d\d)$/i;

/** An object phrase without trailing punctuation or a following clause, at most 8 words. */
function tidy(phrase: string): string {
  const head = phrase.split(/\s+(?:and\s+then|because|but|which|though|although)\s+|[,;:()]/i)[0] ?? "";
  // When it happened is not part of the fact: "I moved to Berlin last year" → "lives in Berlin".
  const timeless = head.replace(/[.!?'"]+$/g, "").replace(TRAILING_TIME, "");
  const words = timeless.trim().split(/\s+/).filter(Boolean);
  return cut(words.slice(0, 8).join(" "), ITEM_CHARS);
}
