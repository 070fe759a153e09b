import { z } from "zod";
import type { ChatModel } from "../../contracts/model.ts";
import type { Usage } from "../../contracts/usage.ts";
import { messageOf } from "../../errors.ts";
import { cleanPatchLabel, MAX_PATCH_INSTRUCTION, type ProceduralPatch } from "../procedural/patch.ts";
import { clausesOf, cut, ITEM_CHARS, lastPerKey, normalise, sentencesOf, stripLead, unique } from "./clauses.ts";
import { factOf } from "./factRules.ts";
import { patchesOf } from "./patchRules.ts";
import { resolvesThread, threadsOf } from "./threadRules.ts";
import { MAX_TOPICS, topicsOf } from "./topics.ts";

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
  /**
   * Standing instructions the user gave about how to answer (procedural patches), one per label;
   * absent when there are none.
   */
  patches?: ProceduralPatch[];
  /** Which extractor produced it: the model, or the offline patterns. */
  path: "model" | "offline";
  /** Why the model was not used although one was given (its call failed); absent otherwise. */
  fallback_reason?: string;
  /** The tokens of the model's call, with its model: absent on the offline path (and when the call failed). */
  usage?: Usage;
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

// ─── the model extractor ────────────────────────────────────────────────────────────────────

const LearnedItemSchema = z.object({ text: z.string(), topics: z.array(z.string()), key: z.string() });
const PatchSchema = z.object({
  label: z.string(),
  instruction: z.string(),
  value: z.string().nullable().optional(),
});

/**
 * The structured answer asked of the model: the shape of {@link Learning} without what the caller
 * already knows (the tools, the path). Every field required, so OpenAI strict mode accepts it —
 * but `patches` (and a patch's `value`) may be null or left out: a model that predates them still
 * answers validly.
 */
export const MemoryLearningSchema = z.object({
  facts: z.array(LearnedItemSchema),
  threads_opened: z.array(LearnedItemSchema),
  threads_resolved_keys: z.array(z.string()),
  episode: z.object({ text: z.string(), topics: z.array(z.string()) }),
  patches: z.array(PatchSchema).nullable().optional(),
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
- patches: standing instructions the USER gives about how to answer them from now on (length, language, tone, things to avoid), not one-off requests. label: dotted lowercase naming what it sets, so a later patch with the same label replaces it: style.length, style.language, style.tone, style.avoid.<thing>, or <area>.<aspect>. instruction: an imperative ("Keep answers short", "Answer in Spanish", "Don't use emojis"). value: the setting ("short", "spanish", "emojis"), or null.
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
    return { ...fromModel(result.value, turn, options.openThreads), usage: { ...result.usage, model: model.model } };
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
    ...patchesField(
      (answer.patches ?? []).flatMap((patch) => {
        const label = cleanPatchLabel(patch.label);
        const instruction = cut(patch.instruction.trim(), MAX_PATCH_INSTRUCTION);
        const value = patch.value?.trim();
        return label && instruction ? [{ label, instruction, data: value ? { value } : {} }] : [];
      }),
    ),
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
 *
 * Patches: the user's standing instructions about how to answer ({@link patchesOf}): "keep your
 * answers short", "answer in Spanish", "be more formal", "don't use emojis".
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
    ...patchesField(patchesOf(turn.user_message)),
    episode: episodeOf(turn),
    path: "offline",
  };
}

/** Most patches one turn teaches: a turn is a message, not a configuration file. */
const MAX_PATCHES_PER_TURN = 8;

/** `{ patches }`, one per label (the last said winning, at most 8), or nothing when there are none. */
function patchesField(patches: readonly ProceduralPatch[]): { patches?: ProceduralPatch[] } {
  const byLabel = new Map<string, ProceduralPatch>();
  for (const patch of patches) {
    byLabel.delete(patch.label);
    byLabel.set(patch.label, patch);
  }
  return byLabel.size > 0 ? { patches: [...byLabel.values()].slice(-MAX_PATCHES_PER_TURN) } : {};
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
