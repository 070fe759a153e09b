/**
 * Compaction: a session's older turns summarised, so the summary stands in
 * for them in what the planner sees (zones.ts shows it first in working
 * memory and hides the episodes it covers).
 *
 * Two summarisers: the offline one is extractive and deterministic (the first
 * sentence of each side of each older turn, bounded), the model one asks
 * memory's ChatModel, while the turn reads its conversation from memory
 * (summariseConversation), so the arena's own planning stays pure
 * (compactConversation). Both fold the previous summary in, and both keep the
 * summary under `max_tokens` by giving up its oldest lines first.
 */
import type { CompactionSettings, ModelSummary, SummariseAsk } from "../contracts/context.ts";
import type { ChatModel } from "../contracts/model.ts";
import { COMPACTION_ACTOR, type Usage } from "../contracts/usage.ts";
import type { Episode } from "../contracts/workspace.ts";
import { type Tokenizer, tokenizerFor } from "./tokenizer.ts";
import type { ContextSummary } from "./zones.ts";

/** How compaction runs: its settings, and the tokenizer counting the summary. */
export interface CompactionOptions extends CompactionSettings {
  tokenizer: Tokenizer;
  /**
   * What the summariser is asked to keep (a compaction request's, or CONCLAVE_COMPACTION_INSTRUCTIONS).
   * The model summariser is given them in its prompt; the offline one is extractive and does not read
   * them (CONTEXT_COMPACTED records them either way).
   */
  instructions?: string;
}

/** The default: the last 2 turns kept as they are. */
export const DEFAULT_KEEP_RECENT_TURNS = 2;

/** The default bound of a summary: a tenth of the session's budget. */
export const SUMMARY_SHARE = 0.1;

/** What one compaction did: the CONTEXT_COMPACTED event's payload (with the summary). */
export interface Compaction {
  summary: ContextSummary;
  summariser: "offline" | "model";
  /** The turns newly folded into the summary. */
  turns_compacted: number[];
  /** What the compacted turns and the old summary took, and what the new summary takes. */
  tokens_before: number;
  tokens_after: number;
}

/** The episodes compaction would fold in now: newer than the summary, older than the recent turns kept. */
export function compactableEpisodes(
  episodes: readonly Episode[],
  summary: ContextSummary | null,
  keepRecentTurns: number,
): Episode[] {
  const fresh = episodes
    .filter((episode) => summary === null || episode.turn_id > summary.through_turn)
    .sort((a, b) => a.turn_id - b.turn_id);
  return fresh.slice(0, Math.max(0, fresh.length - keepRecentTurns));
}

/** The first sentence of a text, on one line, at most `maxTokens` tokens. */
function firstSentence(text: string, maxTokens: number, tokenizer: Tokenizer): string {
  const line = text.replace(/\s+/g, " ").trim();
  const sentence = /^.*?[.!?](?=\s|$)/.exec(line)?.[0] ?? line;
  const short = tokenizer.truncate(sentence, maxTokens);
  return short === sentence ? sentence : `${short}…`;
}

/** A summary's lines cut to `maxTokens`, oldest lines given up first. */
function bounded(lines: string[], maxTokens: number, tokenizer: Tokenizer): string {
  const kept = [...lines];
  while (kept.length > 1 && tokenizer.count(kept.join("\n")) > maxTokens) kept.shift();
  const text = kept.join("\n");
  return tokenizer.count(text) > maxTokens ? tokenizer.truncate(text, maxTokens) : text;
}

/** The offline summariser: extractive and deterministic. */
export function summariseOffline(
  episodes: readonly Episode[],
  previous: ContextSummary | null,
  options: CompactionOptions,
): ContextSummary {
  const { tokenizer } = options;
  const lines = [
    ...(previous ? previous.text.split("\n") : []),
    ...episodes.map(
      (episode) =>
        `T${episode.turn_id}: user: ${firstSentence(episode.user_text, 40, tokenizer)} / reply: ${firstSentence(episode.response, 40, tokenizer)}`,
    ),
  ];
  return {
    through_turn: Math.max(previous?.through_turn ?? 0, ...episodes.map((episode) => episode.turn_id)),
    text: bounded(lines, options.max_tokens, tokenizer),
  };
}

/** The model summariser: the session's model writes the summary (one call; its usage is returned). */
export async function summariseWithModel(
  model: ChatModel,
  episodes: readonly Episode[],
  previous: ContextSummary | null,
  options: CompactionOptions & { signal?: AbortSignal },
): Promise<{ summary: ContextSummary; usage: Usage }> {
  const stream = model.stream({
    caller: COMPACTION_ACTOR,
    system: `Summarise the conversation so far for an assistant who will continue it. Keep facts about the user, decisions, promises and open questions; drop pleasantries. Plain text, at most ${options.max_tokens} tokens.${options.instructions ? `\nInstructions for this summary: ${options.instructions}` : ""}`,
    user: [
      ...(previous ? [`Summary so far:\n${previous.text}`] : []),
      "Turns to fold in:",
      ...episodes.map(
        (episode) => `T${episode.turn_id} user: ${episode.user_text}\nT${episode.turn_id} reply: ${episode.response}`,
      ),
    ].join("\n"),
    maxTokens: options.max_tokens,
    ...(options.signal ? { signal: options.signal } : {}),
  });
  let text = "";
  for await (const part of stream) if (part.type === "content") text += part.delta;
  const usage = await stream.usage;
  return {
    summary: {
      through_turn: Math.max(previous?.through_turn ?? 0, ...episodes.map((episode) => episode.turn_id)),
      text: bounded(text.trim().split("\n"), options.max_tokens, options.tokenizer),
    },
    usage: { ...usage, model: usage.model ?? model.model },
  };
}

/** Folds the older of `episodes` into the summary, offline; null when there is nothing to fold. */
export function compactOffline(
  episodes: readonly Episode[],
  previous: ContextSummary | null,
  options: CompactionOptions,
): Compaction | null {
  const older = compactableEpisodes(episodes, previous, options.keep_recent_turns);
  if (older.length === 0) return null;
  return describe(older, previous, summariseOffline(older, previous, options), "offline", options.tokenizer);
}

/**
 * Folds the older of `episodes` into the summary: with the summary memory's model wrote for the turn
 * (`written`, see {@link summariseConversation}) when it folds in exactly these turns, else offline;
 * null when there is nothing to fold. Pure: the model's call was made before, while the turn read its
 * conversation.
 */
export function compactConversation(
  episodes: readonly Episode[],
  previous: ContextSummary | null,
  options: CompactionOptions,
  written: ModelSummary | null | undefined,
): (Compaction & { usage?: Usage }) | null {
  const older = compactableEpisodes(episodes, previous, options.keep_recent_turns);
  if (older.length === 0) return null;
  const turns = older.map((episode) => episode.turn_id);
  if (!written || written.turns.length !== turns.length || written.turns.some((turn, at) => turn !== turns[at]))
    return describe(older, previous, summariseOffline(older, previous, options), "offline", options.tokenizer);
  const summary = {
    through_turn: written.through_turn,
    text: bounded(written.text.split("\n"), options.max_tokens, options.tokenizer),
  };
  return { ...describe(older, previous, summary, "model", options.tokenizer), usage: written.usage };
}

/**
 * Memory's side of a model compaction: the turns a conversation read found, folded into the session's
 * summary by `model` as `ask` says (the turns after the summary, less the recent ones kept). Null when
 * there is nothing to fold.
 */
export async function summariseConversation(
  model: ChatModel,
  episodes: readonly Episode[],
  ask: SummariseAsk,
  signal?: AbortSignal,
): Promise<ModelSummary | null> {
  const older = compactableEpisodes(episodes, ask.previous, ask.keep_recent_turns);
  if (older.length === 0) return null;
  const { summary, usage } = await summariseWithModel(model, older, ask.previous, {
    keep_recent_turns: ask.keep_recent_turns,
    max_tokens: ask.max_tokens,
    tokenizer: tokenizerFor(ask.tokenizer_model),
    ...(ask.instructions ? { instructions: ask.instructions } : {}),
    ...(signal ? { signal } : {}),
  });
  return { ...summary, turns: older.map((episode) => episode.turn_id), usage };
}

function describe(
  older: Episode[],
  previous: ContextSummary | null,
  summary: ContextSummary,
  summariser: Compaction["summariser"],
  tokenizer: Tokenizer,
): Compaction {
  const before =
    (previous ? tokenizer.count(previous.text) : 0) +
    older.reduce((sum, episode) => sum + tokenizer.count(`${episode.user_text} ${episode.response}`), 0);
  return {
    summary,
    summariser,
    turns_compacted: older.map((episode) => episode.turn_id),
    tokens_before: before,
    tokens_after: tokenizer.count(summary.text),
  };
}
