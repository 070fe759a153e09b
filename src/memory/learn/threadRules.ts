/**
 * The offline extractor's threads: what a turn leaves open (reminders, plans, unanswered questions,
 * promises), and when a later turn resolves one.
 */
import { cut, ITEM_CHARS, lastPerKey, normalise, sentencesOf, stripLead } from "./clauses.ts";
import type { LearnedItem, ThreadRef, TurnToLearn } from "./extract.ts";
import { slugOf, stemWord, topicsOf } from "./topics.ts";

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
export function threadsOf(user: string, reply: string): LearnedItem[] {
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
