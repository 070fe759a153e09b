import { z } from "zod";
import { messageOf } from "../../errors.ts";
import type { ChatModel } from "../../llm/model.ts";
import { MAX_TOPICS, slugOf, stemWord, topicsOf } from "./topics.ts";

/**
 * What one turn teaches memory: facts about the user, threads left open, threads it closes, and
 * the episode itself. Two extractors with the same output: a deterministic offline one (patterns
 * over first-person statements) and a model one (`ChatModel.structured`) that falls back to the
 * offline one when the call fails, so a turn always learns something and never fails for it.
 */

/** A fact or a thread as a turn states it. */
export interface LearnedItem {
  /** Readable text, about the user in the third person without the subject: "works night shifts". */
  text: string;
  /** Its topics ({@link topicsOf}), for ranking and resolution. */
  topics: string[];
  /**
   * The slot it fills, stable across turns so that a later statement updates it instead of adding
   * one: facts `work`, `home`, `origin`, `age`, `name`, `family.<relation>`, `partner`,
   * `pets.<animal>`, `friends.best`, `likes.<thing>`, `is.<thing>`; threads `<kind>.<slug>` with
   * kind `question`, `reminder`, `plan` or `promise`.
   */
  key: string;
}

/** A turn as memory learns from it. */
export interface TurnToLearn {
  user_message: string;
  reply: string;
  turn_id: number;
  /** Tools the turn called, by name. */
  tools?: string[];
}

/** An open thread as extraction needs to see it (a stored thread node fits). */
export interface ThreadRef {
  key: string;
  text: string;
  topics: readonly string[];
}

/** The episode a turn leaves: what was said, its topics, its tools. */
export interface LearnedEpisode {
  text: string;
  topics: string[];
  /** Lowercase, deduplicated, sorted: the same tool is one name whatever the turn called it. */
  tools: string[];
}

/** What a turn teaches (see {@link extractLearning}). */
export interface Learning {
  facts: LearnedItem[];
  threads_opened: LearnedItem[];
  /** Keys of open threads (among those passed in) that this turn closes. */
  threads_resolved_keys: string[];
  episode: LearnedEpisode;
  /** Which extractor produced it: the model, or the offline patterns. */
  path: "model" | "offline";
  /** Why the model was not used although one was given (its call failed); absent otherwise. */
  fallback_reason?: string;
}

/** Options of {@link extractLearning}. */
export interface ExtractOptions {
  /** The threads open before this turn, so it can say which it resolves. */
  openThreads?: readonly ThreadRef[];
  /** Aborts the model call; an aborted caller gets the abort, not the offline fallback. */
  signal?: AbortSignal;
  /** Deadline of the model call. */
  timeoutMs?: number;
}

/** How much of each side of the turn an episode keeps, in characters. */
const EPISODE_SIDE_CHARS = 280;
/** The longest fact or thread text, in characters: memory keeps statements, not paragraphs. */
const ITEM_CHARS = 120;

// ─── the model extractor ────────────────────────────────────────────────────────────────────

const LearnedItemSchema = z.object({ text: z.string(), topics: z.array(z.string()), key: z.string() });

/**
 * The structured answer asked of the model: the shape of {@link Learning} without what the caller
 * already knows (the tools, the path). Every field required, so OpenAI strict mode accepts it.
 */
export const MemoryLearningSchema = z.object({
  facts: z.array(LearnedItemSchema),
  threads_opened: z.array(LearnedItemSchema),
  threads_resolved_keys: z.array(z.string()),
  episode: z.object({ text: z.string(), topics: z.array(z.string()) }),
});
/** The model's answer, before normalisation. */
export type MemoryLearningAnswer = z.infer<typeof MemoryLearningSchema>;

/** The `response_format` name of {@link MemoryLearningSchema}. */
export const MEMORY_LEARNING_SCHEMA_NAME = "memory_learning";

const SYSTEM_PROMPT = `You maintain a user's long-term memory. From one conversation turn, extract:
- facts: durable facts the USER states about themselves, in the third person without the subject ("works night shifts", "has a sister called Ana"). Each has a key naming the slot it fills, so a later fact with the same key replaces it: work, home, origin, age, name, family.<relation>, partner, pets.<animal>, friends.best, likes.<thing>, is.<thing>. Nothing the assistant said, nothing hypothetical.
- threads_opened: things left open: a question the reply did not answer, a reminder the user asked for, a plan with a time, a promise the reply made. Key "<kind>.<slug>" with kind question, reminder, plan or promise; text like "reminder: call the bank tomorrow".
- threads_resolved_keys: keys, from open_threads, of the threads this turn closes (the user says it is done, or the reply answers the question). Only keys listed in open_threads.
- episode: one sentence saying what the turn was about, and its topics.
Topics are short lowercase words. Empty lists when there is nothing. Answer with JSON only.`;

/**
 * What a turn teaches memory.
 *
 * Without a model: {@link extractOffline}. With one: `model.structured` with
 * {@link MemoryLearningSchema} (named `memory_learning`), normalised (keys cleaned, topics
 * recomputed with {@link topicsOf} so they match what ranking computes for messages, resolved keys
 * limited to the open threads given); when that call fails for any reason, the offline extractor
 * runs instead and `fallback_reason` says why — learning must never fail a turn. Only an abort by
 * the caller (`options.signal`) is thrown.
 */
export async function extractLearning(
  turn: TurnToLearn,
  model?: ChatModel,
  options: ExtractOptions = {},
): Promise<Learning> {
  if (!model) return extractOffline(turn, options.openThreads);
  try {
    const result = await model.structured({
      caller: "memory:learn",
      system: SYSTEM_PROMPT,
      user: JSON.stringify({
        user_message: turn.user_message,
        reply: turn.reply,
        tools: turn.tools ?? [],
        open_threads: (options.openThreads ?? []).map(({ key, text }) => ({ key, text })),
      }),
      schema: MemoryLearningSchema,
      schemaName: MEMORY_LEARNING_SCHEMA_NAME,
      signal: options.signal,
      timeoutMs: options.timeoutMs,
    });
    return fromModel(result.value, turn, options.openThreads);
  } catch (error) {
    if (options.signal?.aborted) throw error;
    return { ...extractOffline(turn, options.openThreads), fallback_reason: messageOf(error) };
  }
}

/** The model's answer as a {@link Learning}: keys cleaned, empty items dropped, topics recomputed. */
function fromModel(answer: MemoryLearningAnswer, turn: TurnToLearn, openThreads?: readonly ThreadRef[]): Learning {
  const items = (list: MemoryLearningAnswer["facts"]): LearnedItem[] =>
    list.flatMap((item) => {
      const text = cut(item.text.trim(), ITEM_CHARS);
      const key = cleanKey(item.key);
      return text && key ? [{ text, key, topics: topicsWith(withoutNaming(text), item.topics) }] : [];
    });
  const open = openThreads ? new Set(openThreads.map((thread) => thread.key)) : undefined;
  const resolved = unique(answer.threads_resolved_keys.map(cleanKey)).filter(
    (key) => key !== "" && (!open || open.has(key)),
  );
  const offline = episodeOf(turn);
  const summary = answer.episode.text.trim();
  return {
    facts: lastPerKey(items(answer.facts)),
    threads_opened: lastPerKey(items(answer.threads_opened)),
    threads_resolved_keys: resolved,
    episode: summary
      ? {
          text: cut(summary, 2 * EPISODE_SIDE_CHARS),
          topics: topicsWith(summary, answer.episode.topics),
          tools: offline.tools,
        }
      : offline,
    path: "model",
  };
}

/** A key as memory stores it: lowercase, words joined by `_`, only `a-z 0-9 _ . -`. */
function cleanKey(key: string): string {
  return key
    .trim()
    .toLowerCase()
    .replace(/\s+/g, "_")
    .replace(/[^a-z0-9_.-]/g, "")
    .replace(/^[._-]+|[._-]+$/g, "");
}

/** Topics of a text plus the model's own tags, run through the tagger so they use its vocabulary. */
function topicsWith(text: string, tags: readonly string[]): string[] {
  const own = topicsOf(text);
  if (own.length >= MAX_TOPICS) return own;
  const extra = topicsOf(tags.join(" ")).filter((topic) => !own.includes(topic));
  return [...own, ...extra.slice(0, MAX_TOPICS - own.length)].sort();
}

// ─── the offline extractor ──────────────────────────────────────────────────────────────────

/**
 * The offline extractor: deterministic patterns over the turn.
 *
 * Facts come from the user's first-person statements (questions are skipped: "do I work
 * tomorrow?" states nothing), one clause at a time:
 * - `work`: "I work night shifts", "I now work days", "I'm working nights", "I work as a nurse",
 *   "my job is a …"; "I no longer work" / "I quit my job" / "I'm retired".
 * - `home` / `household` / `origin`: "I live in X", "I moved to X", "I live with X", "I'm from X".
 * - `family.<relation>`, `partner`, `pets.<animal>`, `friends.best`: "my sister is called Ana",
 *   "my sister's name is Ana", "I have a sister (called Ana)", "I have two brothers".
 * - `likes.<thing>`: "I like/love/enjoy/adore/hate/dislike X", "I don't like X" (one key whatever
 *   the feeling, so "I hate jazz" updates "loves jazz").
 * - `name`, `age`, `is.<thing>`: "my name is X" / "call me X" / "I'm Tom", "I'm 34", "I'm a nurse".
 *
 * Threads opened:
 * - `reminder.*`: the user says "remind me (to)", "don't let me forget", "follow up", "get back to me".
 * - `plan.*`: a user plan or request with a time cue ("later", "tomorrow", "tonight", "next week",
 *   "this weekend"): "I need to renew my passport tomorrow", "can you check the trains later?".
 * - `question.*`: a question the user asked when the reply says it cannot answer ("I don't know",
 *   "I'm not sure", "I can't", "no idea", "don't have access").
 * - `promise.*`: a reply sentence promising follow-up work ("I'll remind you", "I will check",
 *   "I'll get back to you", "let me get back to you", "I'll … later/tomorrow"). A promise about the
 *   same topics as a thread the user opened in the same turn is that thread, not a second one.
 *
 * Threads resolved: those of `openThreads` that {@link resolvesThread} says this turn closes.
 */
export function extractOffline(turn: TurnToLearn, openThreads: readonly ThreadRef[] = []): Learning {
  const user = normalise(turn.user_message);
  const reply = normalise(turn.reply);
  const facts: LearnedItem[] = [];
  for (const sentence of sentencesOf(user)) {
    if (sentence.endsWith("?")) continue;
    for (const clause of clausesOf(sentence)) {
      const fact = factOf(stripLead(clause));
      if (fact) facts.push({ ...fact, topics: factTopics(fact.text) });
    }
  }
  return {
    facts: lastPerKey(facts),
    threads_opened: threadsOf(user, reply),
    threads_resolved_keys: openThreads.filter((thread) => resolvesThread(thread, turn)).map((thread) => thread.key),
    episode: episodeOf(turn),
    path: "offline",
  };
}

/**
 * A fact's topics: "called" and "named" in a fact name someone ("has a sister called Ana"), they
 * are not the act of calling, and must not match "remind me to call the bank".
 */
function factTopics(text: string): string[] {
  return topicsOf(withoutNaming(text));
}

function withoutNaming(text: string): string {
  return text.replace(/\b(?:called|named)\b/g, " ");
}

/** The episode of a turn: both sides, cut; the user's topics (what the turn was about); its tools. */
function episodeOf(turn: TurnToLearn): LearnedEpisode {
  const user = cut(normalise(turn.user_message).trim(), EPISODE_SIDE_CHARS);
  const reply = cut(normalise(turn.reply).trim(), EPISODE_SIDE_CHARS);
  return {
    text: `user: ${user}\nreply: ${reply}`,
    // The user's words, not the reply's: a long reply would crowd out what the user talked about.
    topics: topicsOf(turn.user_message),
    tools: unique((turn.tools ?? []).map((tool) => tool.trim().toLowerCase()).filter((tool) => tool !== "")).sort(),
  };
}

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
function factOf(clause: string): Omit<LearnedItem, "topics"> | undefined {
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

// Threads.

const REMIND =
  /\b(?:remind\s+me(?:\s+to|\s+about)?|don't\s+let\s+me\s+forget(?:\s+to|\s+about)?|follow\s+up(?:\s+on)?|get\s+back\s+to\s+me(?:\s+on|\s+about)?)\b\s*([\s\S]*)/i;
const TIME_CUE = /\b(?:later|tomorrow|tonight|next\s+(?:week|month|time)|this\s+(?:weekend|evening|afternoon))\b/i;
const PLAN_OR_REQUEST =
  /^(?:I\s+(?:need|have|must|should|want|will|plan|intend|am\s+going|'m\s+going|gotta|got\s+to)|I'll|(?:can|could|would|will)\s+you|please|let's)\b/i;
/** The reply says it cannot answer. */
const NOT_KNOWING =
  /\b(?:I\s+(?:don't|do\s+not)\s+know|I(?:'m|\s+am)\s+(?:not\s+sure|unable|not\s+able)|I\s+(?:can't|cannot)|no\s+idea|(?:don't|do\s+not)\s+have\s+access|not\s+certain)\b/i;
/** The reply promises to do something later. */
const PROMISE =
  /\b(?:I(?:'ll|\s+will)\s+(?:(?:also|then|definitely|make\s+sure\s+to)\s+)?(?:remind\s+you|follow\s+up|get\s+back\s+to\s+you|check|look\s+into|find\s+out|let\s+you\s+know|send|look\s+(?:it\s+)?up|ask)|let\s+me\s+get\s+back\s+to\s+you)\b/i;
const FUTURE_I = /\bI(?:'ll|\s+will)\b/i;
/** The words that make a sentence a promise, not what it promises. */
const PROMISE_WORDS =
  /\b(?:I'll|I\s+will|let\s+me|remind(?:\s+you)?|follow\s+up|get\s+back(?:\s+to\s+you)?|check(?:\s+on)?|look\s+into|look(?:\s+it)?\s+up|find\s+out|let\s+you\s+know|send|ask|sure|okay|ok|definitely)\b/gi;

/** The threads a turn opens, in order: the user's, then the reply's promises not already among them. */
function threadsOf(user: string, reply: string): LearnedItem[] {
  const threads: LearnedItem[] = [];
  const cannotAnswer = NOT_KNOWING.test(reply);
  for (const sentence of sentencesOf(user)) {
    const lead = stripLead(sentence);
    const remind = REMIND.exec(lead);
    if (remind) {
      const task = tidyTask(remind[1] ?? "") || tidyTask(lead);
      add(threads, "reminder", task);
    } else if (TIME_CUE.test(lead) && (PLAN_OR_REQUEST.test(lead) || lead.endsWith("?"))) {
      add(threads, "plan", tidyTask(lead));
    } else if (lead.endsWith("?") && cannotAnswer) {
      add(threads, "question", tidyTask(lead));
    }
  }
  for (const sentence of sentencesOf(reply)) {
    if (!PROMISE.test(sentence) && !(FUTURE_I.test(sentence) && TIME_CUE.test(sentence))) continue;
    // What the promise is about, without the promising words: "I'll remind you" alone is about
    // nothing, an acknowledgement of the user's own request, not a thread of its own.
    const about = sentence.replace(PROMISE_WORDS, " ");
    const topics = topicsOf(about);
    if (topics.length === 0) continue;
    // "Remind me to call the bank" answered "I'll remind you to call the bank": one thread.
    if (threads.some((thread) => overlapOfSmaller(thread.topics, topics) >= 0.5)) continue;
    add(threads, "promise", tidyTask(sentence), about);
  }
  return lastPerKey(threads);
}

/** Adds a thread: its text says the task; its key and topics come from what it is `about` (the task by default). */
function add(
  threads: LearnedItem[],
  kind: "reminder" | "plan" | "question" | "promise",
  task: string,
  about = task,
): void {
  const slug = slugOf(about);
  if (!task || !slug) return;
  threads.push({ text: `${kind}: ${task}`, topics: topicsOf(about), key: `${kind}.${slug}` });
}

/** A task as a thread says it: one line, no trailing punctuation except a question mark. */
function tidyTask(text: string): string {
  return cut(
    text
      .replace(/\s+/g, " ")
      .replace(/[.!,;:]+$/g, "")
      .trim(),
    ITEM_CHARS,
  );
}

// Resolution.

/** The user says the thing is done. */
const DONE =
  /\b(?:done|solved|sorted(?:\s+(?:it|out))?|fixed|resolved|finished|(?:it|that|this)\s+worked|did\s+it|figured\s+it\s+out|all\s+set|took\s+care\s+of|taken\s+care\s+of|handled|no\s+longer\s+need|never\s*mind)\b/i;
/** A negation just before a done word: "not done", "haven't finished", "didn't fix it". */
const NEGATED_BEFORE = /(?:\bnot|n't|\bnever|\bno)\s+(?:\w+\s+){0,2}$/i;
/** "I called", "I just paid": a first-person past tense, its verb captured. */
const I_PAST = /\bI(?:'ve)?\s+(?:(?:just|finally|already|actually|have)\s+)*([a-z]+ed)\b/gi;

/**
 * More than this share of a thread's topics must come up again for a turn to resolve it: a
 * two-topic thread ("call the bank": call, money) needs both, so "I called my sister" does not
 * close it.
 */
export const RESOLVE_COVERAGE = 0.5;

/**
 * Whether a later turn closes an open thread. Deterministic, two conditions:
 *
 * 1. The turn is about the thread: more than half of the thread's topics ({@link RESOLVE_COVERAGE})
 *    appear among the topics of the user's message and the reply together. A thread with no topics is
 *    never closed this way (it would match everything).
 * 2. And it is closed:
 *    - the user says so, in a sentence that is not a question, with a done word not negated just
 *      before ("done", "solved", "fixed", "finished", "it/that worked", "did it", "figured it out",
 *      "all set", "took care of", "never mind", …), or says "I <verb>ed" where the verb is the
 *      thread's first word ("I called the bank" closes `reminder.call_bank`);
 *    - or, for a `question.*` thread, the reply covers more than half of its topics by itself and
 *      does not say it cannot answer ("I don't know", "I'm not sure", "I can't", …).
 */
export function resolvesThread(thread: ThreadRef, turn: Pick<TurnToLearn, "user_message" | "reply">): boolean {
  if (thread.topics.length === 0) return false;
  const user = normalise(turn.user_message);
  const reply = normalise(turn.reply);
  const replyTopics = topicsOf(reply);
  const turnTopics = new Set([...topicsOf(user), ...replyTopics]);
  if (coverage(thread.topics, turnTopics) <= RESOLVE_COVERAGE) return false;
  if (userSaysDone(user, thread)) return true;
  return (
    thread.key.startsWith("question.") &&
    coverage(thread.topics, new Set(replyTopics)) > RESOLVE_COVERAGE &&
    !NOT_KNOWING.test(reply)
  );
}

function userSaysDone(user: string, thread: ThreadRef): boolean {
  const verb = thread.key.split(".")[1]?.split("_")[0];
  for (const sentence of sentencesOf(user)) {
    if (sentence.endsWith("?")) continue;
    const done = DONE.exec(sentence);
    if (done && !NEGATED_BEFORE.test(sentence.slice(0, done.index))) return true;
    if (verb) {
      for (const past of sentence.matchAll(I_PAST)) if (stemWord((past[1] ?? "").toLowerCase()) === verb) return true;
    }
  }
  return false;
}

/** The share of `topics` found in `among` (0 for no topics). */
function coverage(topics: readonly string[], among: ReadonlySet<string>): number {
  if (topics.length === 0) return 0;
  let shared = 0;
  for (const topic of topics) if (among.has(topic)) shared++;
  return shared / topics.length;
}

/** Shared topics over the size of the smaller list (0 when either is empty). */
function overlapOfSmaller(a: readonly string[], b: readonly string[]): number {
  if (a.length === 0 || b.length === 0) return 0;
  const [small, large] = a.length <= b.length ? [a, new Set(b)] : [b, new Set(a)];
  return coverage(small, large);
}

// Text helpers.

/** Straight apostrophes and quotes, so patterns need one spelling of "don't". */
function normalise(text: string): string {
  return text.replace(/[\u2018\u2019\u02bc]/g, "'").replace(/[\u201c\u201d]/g, '"');
}

/** Sentences, each with its end punctuation ("?" marks a question). */
function sentencesOf(text: string): string[] {
  return (text.match(/[^.!?\n]+[.!?]*/g) ?? []).map((sentence) => sentence.trim()).filter(Boolean);
}

/** Clauses of a sentence: split where a new statement starts ("…, so I …", "… and my sister …", "… but …"). */
function clausesOf(sentence: string): string[] {
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
function stripLead(clause: string): string {
  let rest = clause.trim();
  for (let match = LEAD.exec(rest); match && match[0].length > 0; match = LEAD.exec(rest)) {
    rest = rest.slice(match[0].length);
  }
  return rest;
}

function capitalise(word: string): string {
  return word.charAt(0).toUpperCase() + word.slice(1);
}

function cut(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1).trimEnd()}…`;
}

function unique<T>(values: readonly T[]): T[] {
  return [...new Set(values)];
}

/** One item per key, the last said winning, in order of each key's first appearance. */
function lastPerKey(items: readonly LearnedItem[]): LearnedItem[] {
  const byKey = new Map<string, LearnedItem>();
  for (const item of items) byKey.set(item.key, item);
  return [...byKey.values()];
}
