import { z } from "zod";
import { SessionId, TurnId } from "./ids.ts";
import { LedgerDigest } from "./ledger.ts";
import { TurnWarning } from "./turn.ts";
import { Episode } from "./workspace.ts";

export const MemoryRetrieveRequest = z.object({
  session_id: SessionId,
  turn_id: TurnId,
  user_message: z.string(),
  limit: z.number().int().min(0).max(50).default(3),
});
export type MemoryRetrieveRequest = z.infer<typeof MemoryRetrieveRequest>;

export const MemoryRetrieveReply = z.object({
  episodes: z.array(Episode),
  user_facts: z.array(z.string()),
  open_threads: z.array(z.string()),
  /**
   * Standing instructions on how to answer the user (procedural memory: "Keep answers short",
   * "Answer in Spanish"), those an adapter applied, the most recently taught first, a few at most.
   */
  procedures: z.array(z.string()).max(20).optional(),
  /** The session's truth and task ledgers in short (added by the runner; absent when both are empty). */
  ledgers: LedgerDigest.optional(),
});
export type MemoryRetrieveReply = z.infer<typeof MemoryRetrieveReply>;

export const MemoryCommitRequest = z.object({ episode: Episode });
export type MemoryCommitRequest = z.infer<typeof MemoryCommitRequest>;

export const MemoryCommitReply = z.object({
  summary: z.string(),
  stored: z.boolean(),
  /** Phases of the commit that failed (episode_write, fact_extraction, …): the turn ends PartialSuccess naming them. */
  warnings: z.array(TurnWarning).max(16).optional(),
});
export type MemoryCommitReply = z.infer<typeof MemoryCommitReply>;

/** Requested on `conclave.memory.search`: what a session's memory holds about `query`, best first. */
export const MemorySearchRequest = z.object({
  session_id: SessionId,
  query: z.string().max(4_000),
  limit: z.number().int().min(1).max(100).default(10),
});
export type MemorySearchRequest = z.infer<typeof MemorySearchRequest>;

/** One item of a memory search: a fact, an open or closed thread, or an episode. */
export const MemoryItem = z.object({
  id: z.string(),
  kind: z.enum(["fact", "thread", "episode"]),
  text: z.string(),
  topics: z.array(z.string()),
  recurrence: z.number().int(),
  updated_at: z.number(),
});
export type MemoryItem = z.infer<typeof MemoryItem>;

export const MemorySearchReply = z.object({ items: z.array(MemoryItem) });
export type MemorySearchReply = z.infer<typeof MemorySearchReply>;
