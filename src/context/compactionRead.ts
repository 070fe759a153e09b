/**
 * What a compaction folds in: the conversation, not what one retrieval
 * returned. Memory brings a turn a few episodes (the context stage asks for
 * three, ranked for the message); the turns a compaction folds in are every
 * turn after the session's summary, read by reference from where they are
 * stored write-once (memory's episodes), and only in a turn that will compact.
 *
 * The context stage gives its memory read a {@link CompactionProbe}: once
 * memory has answered, {@link turnsToRead} plans the turn's context as the
 * agents stage will (pure CPU), and names the turns to read when the pressure
 * has reached the compact ratio; none otherwise, so a turn that does not
 * compact makes no extra request.
 */
import type { AgentContext } from "../contracts/agent.ts";
import {
  type ArenaPolicy,
  type ContextArenaState,
  MAX_SUMMARY_TOKENS,
  type ModelSummary,
  type SummariseAsk,
} from "../contracts/context.ts";
import type { MemoryRefs, MemoryRetrieveReply, MemoryRetrieveRequest } from "../contracts/memory.ts";
import type { Episode } from "../contracts/workspace.ts";
import { arenaPressure, DEFAULT_ARENA_POLICY, keepRecentTurns, pendingRequest, summaryBound } from "./arena.ts";
import { DEFAULT_KEEP_RECENT_TURNS } from "./compaction.ts";
import { pendingSupplements, withSupplements } from "./supplemental.ts";

/** The most turns one compaction reads (and folds in): a memory read names at most 50 episodes. */
export const COMPACTION_READ_MAX = 50;

/** What the memory read needs to tell whether the turn will compact: the arena as the turn plans it. */
export interface CompactionProbe {
  /** The session's arena as the turn starts. */
  arena: ContextArenaState;
  /** The turn's agent context before memory answered (its message, sensors, stance). */
  context: AgentContext;
  policy?: ArenaPolicy;
  /** How long memory's model may take to write the summary (half the context stage's deadline). */
  summary_deadline_ms?: number;
}

/** The context stage's memory read: a retrieval, and the probe that may call for the conversation. */
export type TurnMemoryRequest = MemoryRetrieveRequest & { compaction?: CompactionProbe };

/** Memory's reply to the turn, with the conversation's turns when the turn will compact. */
export type TurnMemoryReply = MemoryRetrieveReply & {
  /** The episodes of the turns after the summary (at most {@link COMPACTION_READ_MAX}), oldest first. */
  conversation?: Episode[];
  /** The summary memory's model wrote of them (absent offline: the arena summarises them itself). */
  summarised?: ModelSummary;
};

/**
 * Whether turn `turnId` could fold any turn into the summary: more turns after it than the recent ones
 * compaction keeps. Else the turn needs no probe (a session's first turns, a summary just made).
 */
export function mayCompact(arena: ContextArenaState, policy: ArenaPolicy | undefined, turnId: number): boolean {
  const keep = policy?.compaction?.keep_recent_turns ?? DEFAULT_KEEP_RECENT_TURNS;
  return turnId - 1 - (arena.summary?.through_turn ?? 0) > keep;
}

/** The agent context with what memory retrieved, as the turn gives it to the context arena (machines/turn). */
export function withRetrieved(context: AgentContext, reply: MemoryRetrieveReply): AgentContext {
  return {
    ...context,
    episodes: reply.episodes,
    ...(reply.user_facts.length > 0 ? { user_facts: reply.user_facts } : {}),
    ...(reply.open_threads.length > 0 ? { open_threads: reply.open_threads } : {}),
    ...(reply.procedures && reply.procedures.length > 0 ? { procedures: reply.procedures } : {}),
    ...(reply.persona ? { persona: reply.persona } : {}),
    ...(reply.ledgers ? { ledgers: reply.ledgers } : {}),
  };
}

/**
 * The turns to read before turn `turnId` plans its context: those after the summary (the newest
 * {@link COMPACTION_READ_MAX}) when the pressure calls for compaction or a compaction request is
 * pending, else none.
 */
export function turnsToRead(probe: CompactionProbe, reply: MemoryRetrieveReply, turnId: number): number[] {
  const through = probe.arena.summary?.through_turn ?? 0;
  const from = Math.max(through + 1, turnId - COMPACTION_READ_MAX);
  if (from >= turnId) return [];
  // A pending compaction request compacts whatever the pressure: read the conversation.
  if (pendingRequest(probe.arena, reply.compaction_request) !== null)
    return Array.from({ length: turnId - from }, (_, index) => from + index);
  // The supplements the turn will take press too (supplemental.ts), as in the turn's own plan.
  const context = withSupplements(
    withRetrieved(probe.context, reply),
    pendingSupplements(probe.arena, reply.supplements),
  );
  const pressure = arenaPressure(probe.arena, context, probe.policy ?? DEFAULT_ARENA_POLICY);
  if (pressure.level === "normal") return [];
  return Array.from({ length: turnId - from }, (_, index) => from + index);
}

/**
 * What the conversation read asks memory's model to summarise: the turns after the summary, less the
 * recent ones kept, bounded and instructed as the turn's own compaction will be (arena.ts).
 */
export function summariseAsk(probe: CompactionProbe, reply: MemoryRetrieveReply): SummariseAsk {
  const policy = probe.policy ?? DEFAULT_ARENA_POLICY;
  const summary = probe.arena.summary;
  const instructions = pendingRequest(probe.arena, reply.compaction_request)?.instructions;
  return {
    previous: summary?.text === undefined ? null : { through_turn: summary.through_turn, text: summary.text },
    keep_recent_turns: keepRecentTurns(policy),
    // Within what the request allows, at least 1: a bound from a huge budget must not get the read refused.
    max_tokens: Math.min(Math.max(1, summaryBound(policy)), MAX_SUMMARY_TOKENS),
    ...(instructions ? { instructions } : {}),
    ...(policy.model ? { tokenizer_model: policy.model } : {}),
    ...(probe.summary_deadline_ms ? { deadline_ms: probe.summary_deadline_ms } : {}),
  };
}

/**
 * A memory read of `turns`' episodes by reference (nothing ranked, nothing else named); with `summarise`,
 * memory's model folds them into the summary too (nothing when memory has no model).
 */
export function conversationRequest(
  sessionId: string,
  turnId: number,
  turns: number[],
  summarise?: SummariseAsk,
): MemoryRetrieveRequest {
  const resolve: MemoryRefs = { episodes: turns, facts: [], threads: [], procedures: [] };
  return {
    session_id: sessionId,
    turn_id: turnId,
    user_message: "",
    limit: 0,
    resolve,
    ...(summarise ? { summarise } : {}),
  };
}
