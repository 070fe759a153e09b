/**
 * The offline topic tagger: the words of a text reduced to a few stable tags, so that "I can't
 * sleep after my night shift" and "works night shifts" share `night` and `work`.
 *
 * Deterministic and dependency-free on purpose: it is what memory ranks by when there is no model
 * and no embedder, and its tags are stored on every memory node, so the same text must always give
 * the same tags (a change here changes what old memories match).
 */

/** At most this many topics per text: enough to match on, few enough to keep overlap meaningful. */
export const MAX_TOPICS = 12;

/**
 * Words that carry no topic: function words, pronouns, auxiliaries, fillers and time words. Time
 * words ("tomorrow", "later") are left out because they say when, not what: two unrelated
 * reminders for tomorrow must not match each other.
 */
const STOP_WORDS: ReadonlySet<string> = new Set(
  `a about above after again against ago all almost also although always am an and another any anybody anyone
  anything anyway anyways are aren't around as at away be because been before being below between both but by
  can can't cannot could couldn't did didn't do does doesn't doing don't done down during each either else even
  ever every everyone everything few for from further get gets getting go goes going gone got gotta had hadn't has
  hasn't have haven't having he he'd he'll he's her here hers herself hi him himself his hey how i i'd i'll i'm i've
  if in into is isn't it it's its itself just know let let's like lot lots made make many may maybe me might mine
  more most much must my myself need needs no nor not now of off oh ok okay on once one only or other our ours
  ourselves out over own please pretty quite rather really right same say said shall she she'd she'll she's should
  shouldn't so some somebody someone something sometimes soon still such sure than thank thanks that that's the
  their theirs them themselves then there there's these they they'd they'll they're they've thing things think this
  those though through to today tomorrow tonight too under until up upon us very via was wasn't we we'd we'll we're
  we've were weren't what what's whatever when where which while who who's whom whose why will with within without
  won't would wouldn't yeah yes yesterday yet you you'd you'll you're you've your yours yourself yourselves later
  week weeks day days month months year years time times morning evening afternoon hour hours minute minutes
  want wants wanted feel feels felt guess mean means bit little kind sort actually basically literally anymore
  already love loves loved hate hates hated enjoy enjoys enjoyed adore dislike dislikes disliked two three four
  five six seven eight nine ten`
    .split(/\s+/)
    .filter((word) => word.length > 0),
);

/**
 * A few words that mean the same thing for memory, by their stem. Small on purpose: each entry is
 * a bet that users who say one mean the other, and a wrong bet makes unrelated memories match.
 */
const SYNONYMS: Readonly<Record<string, string>> = {
  // work
  job: "work",
  work: "work",
  shift: "work",
  office: "work",
  boss: "work",
  career: "work",
  coworker: "work",
  colleague: "work",
  workplace: "work",
  overtime: "work",
  employer: "work",
  // family
  family: "family",
  sister: "family",
  brother: "family",
  sibling: "family",
  mother: "family",
  mom: "family",
  mum: "family",
  father: "family",
  dad: "family",
  parent: "family",
  son: "family",
  daughter: "family",
  aunt: "family",
  uncle: "family",
  cousin: "family",
  grandmother: "family",
  grandma: "family",
  grandfather: "family",
  grandpa: "family",
  // partner
  partner: "partner",
  wife: "partner",
  husband: "partner",
  boyfriend: "partner",
  girlfriend: "partner",
  // sleep
  sleep: "sleep",
  slept: "sleep",
  sleepy: "sleep",
  asleep: "sleep",
  tired: "sleep",
  insomnia: "sleep",
  nap: "sleep",
  exhausted: "sleep",
  awake: "sleep",
  // money
  money: "money",
  bank: "money",
  bill: "money",
  rent: "money",
  loan: "money",
  debt: "money",
  salary: "money",
  budget: "money",
  // health
  health: "health",
  doctor: "health",
  sick: "health",
  ill: "health",
  hospital: "health",
  medicine: "health",
  pain: "health",
  // stress
  stress: "stress",
  stressed: "stress",
  anxious: "stress",
  anxiety: "stress",
  worried: "stress",
  worry: "stress",
  overwhelmed: "stress",
  // home
  home: "home",
  live: "home",
  house: "home",
  apartment: "home",
  flat: "home",
  // study
  school: "study",
  study: "study",
  exam: "study",
  university: "study",
  homework: "study",
  // music
  music: "music",
  song: "music",
  concert: "music",
  band: "music",
  // exercise
  gym: "exercise",
  exercise: "exercise",
  workout: "exercise",
};

/** `-ing` words that are not verb forms; stripping them would merge "morning" with "morn". */
const ING_WORDS: ReadonlySet<string> = new Set([
  "morning",
  "evening",
  "nothing",
  "something",
  "anything",
  "everything",
  "wedding",
  "ceiling",
  "during",
  "string",
  "spring",
  "thing",
  "king",
  "ring",
  "wing",
  "sing",
  "bring",
  "boring",
  "interesting",
]);

const VOWEL = /[aeiouy]/;

/**
 * A word's stem, by a few suffix rules (plural, `-ing`, `-ed`): enough to make "shifts" and "shift",
 * "sleeping" and "sleep", "called" and "call" meet, without a dictionary. Lowercase input.
 */
export function stemWord(word: string): string {
  if (word.length <= 3) return word;
  if (word.endsWith("ing") && !ING_WORDS.has(word)) return restore(word.slice(0, -3), word);
  if (word.endsWith("ed") && !word.endsWith("eed")) return restore(word.slice(0, -2), word);
  if (word.endsWith("ies") && word.length > 4) return `${word.slice(0, -3)}y`;
  if (/(?:sses|xes|ches|shes|zzes)$/.test(word)) return word.slice(0, -2);
  if (word.endsWith("s") && !/(?:ss|us|is|ous)$/.test(word)) return word.slice(0, -1);
  return word;
}

/** After `-ing`/`-ed` is cut: undo a doubled consonant ("stopp" → "stop") or put back a silent e ("mov" → "move"). */
function restore(stem: string, word: string): string {
  // Too short or no vowel left ("bring" → "br", "red" → "r"): the suffix was part of the word.
  if (stem.length < 3 || !VOWEL.test(stem)) return word;
  const last = stem.at(-1) ?? "";
  if (last === stem.at(-2) && !"lsz".includes(last) && !VOWEL.test(last)) return stem.slice(0, -1);
  // One vowel then one final consonant ("lik", "mov", "shar"): the e was silent ("like", "move", "share").
  if (/^[^aeiouy]*[aeiouy][^aeiouywx]$/.test(stem)) return `${stem}e`;
  return stem;
}

/** The canonical tag of one lowercase word, or `undefined` when it carries no topic. */
export function topicOfWord(word: string): string | undefined {
  if (word.length < 2 || STOP_WORDS.has(word)) return undefined;
  // A synonym is looked up before and after stemming: "tired" must not become "tir".
  const direct = SYNONYMS[word];
  if (direct) return direct;
  const stem = stemWord(word);
  if (STOP_WORDS.has(stem)) return undefined;
  return SYNONYMS[stem] ?? stem;
}

/**
 * The lowercase words of a text: apostrophes kept inside words ("can't"), curly ones straightened,
 * a possessive "'s" dropped ("bank's" → "bank"; "it's" → "it", a stop word either way).
 */
export function wordsOf(text: string): string[] {
  const words =
    text
      .toLowerCase()
      .replace(/[\u2018\u2019]/g, "'")
      .match(/[a-z0-9]+(?:'[a-z]+)?/g) ?? [];
  return words.map((word) => (word.endsWith("'s") ? word.slice(0, -2) : word));
}

/**
 * The offline topic tagger: the topics of `text`, sorted and unique, at most {@link MAX_TOPICS}.
 *
 * Lowercased, stop words removed, plurals, `-ing` and `-ed` stemmed, and a small synonym map
 * applied (job/work/shift → `work`, sister/brother/mother → `family`, sleep/tired/insomnia →
 * `sleep`, …). When a text has more than 12 topics, the most frequent are kept (ties: first seen),
 * so a long text keeps what it talks about most rather than what sorts first.
 *
 * This is the tagger used when there is no model; it is not semantic (see `offlineEmbedding`).
 */
export function topicsOf(text: string): string[] {
  const counts = new Map<string, number>();
  for (const word of wordsOf(text)) {
    const topic = topicOfWord(word);
    if (topic !== undefined) counts.set(topic, (counts.get(topic) ?? 0) + 1);
  }
  let topics = [...counts.keys()];
  if (topics.length > MAX_TOPICS) {
    // Map order is first appearance, and sort is stable: equal counts keep it.
    topics = topics.sort((a, b) => (counts.get(b) ?? 0) - (counts.get(a) ?? 0)).slice(0, MAX_TOPICS);
  }
  return topics.sort();
}

/**
 * A stable slug of a phrase, for memory keys: its non-stop words, stemmed (no synonyms, so
 * "likes.jazz" and "likes.music" stay apart), joined by `_`, at most `maxWords` words.
 * Empty when the phrase has no content word.
 */
export function slugOf(phrase: string, maxWords = 4): string {
  const words: string[] = [];
  for (const word of wordsOf(phrase)) {
    if (STOP_WORDS.has(word) || word.includes("'")) continue;
    words.push(stemWord(word));
    if (words.length >= maxWords) break;
  }
  return words.join("_");
}
