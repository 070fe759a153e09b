import { z } from "zod";
import { ModelSummary, SummariseAsk } from "./context.ts";
import { SessionId, TurnId } from "./ids.ts";
import { LedgerDigest, RecordedCompactionRequest } from "./ledger.ts";
import { ActiveSkillIds } from "./skillActivations.ts";
import { RecordedSupplement, SUPPLEMENTS_KEPT } from "./supplement.ts";
import { TurnWarning } from "./turn.ts";
import { Usage } from "./usage.ts";
import { Episode } from "./workspace.ts";

/** A memory graph node's id, as a reference names it (`fact.<key>`, `thread.<key>`, `procedure.<label>`). */
const NodeRef = z.string().min(1).max(400);

/**
 * What a retrieval gave, by reference: the source records' ids, each list in the order given, and
 * none of their text. What a turn's MEMORY_RETRIEVED stores, so a retrieved fact or episode lives
 * only where its source does: a reference whose source was trimmed, expired or erased resolves to nothing.
 */
export const MemoryRefs = z.object({
  /** The turns whose episodes were given (the episode store's and the graph's `episode.<turn>`). */
  episodes: z.array(TurnId).max(50),
  /** The user facts' node ids. */
  facts: z.array(NodeRef).max(1_000),
  /** The open threads' node ids. */
  threads: z.array(NodeRef).max(1_000),
  /** The procedures' node ids. */
  procedures: z.array(NodeRef).max(20),
  /** The persona's node id, when the persona was given (absent from references written before it was). */
  persona: z.array(NodeRef).max(1).optional(),
});
export type MemoryRefs = z.infer<typeof MemoryRefs>;

export const MemoryRetrieveRequest = z.object({
  session_id: SessionId,
  turn_id: TurnId,
  user_message: z.string(),
  limit: z.number().int().min(0).max(50).default(3),
  /**
   * Not a retrieval but a read: the records these references name, as they are stored now (a
   * taken-over turn's recorded retrieval). Nothing is ranked; a record that is gone is left out.
   */
  resolve: MemoryRefs.optional(),
  /**
   * With `resolve` (a turn's read of the conversation before it compacts): fold the turns read into the
   * session's summary with memory's model, answered in `summary`. A memory service with no model ignores it.
   */
  summarise: SummariseAsk.optional(),
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
  /**
   * The persona memory evolved for the session (its traits, strongest first, as text); absent
   * while it has none. The context arena puts it in the `identity_persona` zone.
   */
  persona: z.string().max(4_000).optional(),
  /** The session's truth and task ledgers in short (added by the runner; absent when both are empty). */
  ledgers: LedgerDigest.optional(),
  /**
   * The ids of what the lists above hold, in their order (set by the memory service; absent from an
   * older one's reply). A resolution's reply names only what it found.
   */
  refs: MemoryRefs.optional(),
  /** A resolution's: how many of the references it was given name a record that is gone. */
  unresolved: z.number().int().min(0).optional() /**
   * The tokens of the model calls memory made for it, by source (`memory:embeddings`,
   * `memory:extraction`), each with the model it ran on: the turn's cost counts them. Absent when it made none.
   */,
  usage: z.record(z.string(), Usage).optional(),
  /**
   * The session's latest compaction request, read with the ledgers (added by the runner; absent when
   * there is none). The turn compacts when its arena has not consumed it yet (docs/context.md).
   */
  compaction_request: RecordedCompactionRequest.optional(),
  /**
   * The skills activated for the session (`client.skills.activate`), read with the ledgers (added by the
   * runner; absent when there are none): every agent the turn asks is given them (AgentRequest `active_skills`).
   */
  active_skills: ActiveSkillIds.optional(),
  /**
   * The session's recorded supplements, read with the ledgers (added by the runner; absent when there are
   * none). The turn's arena takes those it has not consumed (docs/context.md, "Supplemental injection").
   */
  supplements: z.array(RecordedSupplement).max(SUPPLEMENTS_KEPT).optional(),
  /** The answer to the request's `summarise`: absent when none was asked, memory has no model, or the call failed. */
  summary: ModelSummary.optional(),
});
export type MemoryRetrieveReply = z.infer<typeof MemoryRetrieveReply>;

/**
 * The MEMORY_RETRIEVED payload since references (issue 41): what was retrieved, by reference, and
 * whether the ledgers' digest was given (read from the ledgers, which keep their own retention).
 */
export const MemoryRetrievedRefs = z.object({
  refs: MemoryRefs,
  /** The turn's context held the session's ledger digest. */
  ledgers: z
    .boolean()
    .optional() /** The tokens the retrieval's model calls used (its message's embedding), by source: see MemoryRetrieveReply. */,
  usage: z.record(z.string(), Usage).optional(),
});
export type MemoryRetrievedRefs = z.infer<typeof MemoryRetrievedRefs>;

/**
 * A stored MEMORY_RETRIEVED: references (what is written now), or, in a log written before
 * references, the retrieval with its text embedded (still read).
 */
export const MemoryRetrievedPayload = z.union([MemoryRetrievedRefs, MemoryRetrieveReply]);
export type MemoryRetrievedPayload = z.infer<typeof MemoryRetrievedPayload>;

/** True when the stored payload holds references, not an older log's embedded text. */
export const isRetrievedRefs = (payload: MemoryRetrievedPayload): payload is MemoryRetrievedRefs =>
  "refs" in payload && !("user_facts" in payload);

/**
 * What a retrieval's MEMORY_RETRIEVED stores: its references, none of its text. A reply without
 * `refs` (an older memory service) is referenced by its episodes' turns alone.
 */
export function retrievedRefs(reply: MemoryRetrieveReply): MemoryRetrievedRefs {
  const refs = reply.refs ?? {
    episodes: reply.episodes.map((episode) => episode.turn_id),
    facts: [],
    threads: [],
    procedures: [],
  };
  return { refs, ...(reply.ledgers ? { ledgers: true } : {}), ...(reply.usage ? { usage: reply.usage } : {}) };
}

/**
 * The warning of a turn (or run) that went on from its log and resolved its recorded references
 * to fewer records than they name: `gone` of them are no longer stored, and are left out.
 */
export const unresolvedMemoryWarning = (gone: number): TurnWarning => ({
  stage: "context",
  code: "not_found",
  message: `${gone} retrieved memory item(s) are no longer stored (trimmed, expired or erased): left out`,
  subject: "memory",
});

/** How many items a stored MEMORY_RETRIEVED names, either shape: for counts and renderings. */
export function retrievedCounts(payload: MemoryRetrievedPayload): {
  episodes: number;
  facts: number;
  threads: number;
  procedures: number;
} {
  if (isRetrievedRefs(payload)) {
    const { episodes, facts, threads, procedures } = payload.refs;
    return { episodes: episodes.length, facts: facts.length, threads: threads.length, procedures: procedures.length };
  }
  return {
    episodes: payload.episodes.length,
    facts: payload.user_facts.length,
    threads: payload.open_threads.length,
    procedures: payload.procedures?.length ?? 0,
  };
}

export const MemoryCommitRequest = z.object({ episode: Episode });
export type MemoryCommitRequest = z.infer<typeof MemoryCommitRequest>;

export const MemoryCommitReply = z.object({
  summary: z.string(),
  stored: z.boolean(),
  /** Phases of the commit that failed (episode_write, fact_extraction, …): the turn ends PartialSuccess naming them. */
  warnings: z.array(TurnWarning).max(16).optional(),
  /**
   * The tokens of the model calls memory made for it, by source (`memory:embeddings`,
   * `memory:extraction`), each with the model it ran on: the turn's cost counts them. Absent when it made none.
   */
  usage: z.record(z.string(), Usage).optional(),
  /** The insights the commit raised for the first time, by id (docs/memory.md, "Insights"). */
  insights: z.array(z.string().max(64)).max(100).optional(),
});
export type MemoryCommitReply = z.infer<typeof MemoryCommitReply>;

/** Requested on `conclave.memory.search`: what a session's memory holds about `query`, best first. */
export const MemorySearchRequest = z.object({
  session_id: SessionId,
  query: z.string().max(4_000),
  limit: z.number().int().min(1).max(100).default(10),
  /** Only the episodes whose turn invoked this tool (by name, case aside): no facts or threads. */
  tool: z.string().min(1).max(256).optional(),
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
  /** An episode's: the tools its turn invoked (lowercase, sorted), when it invoked any. */
  tools: z.array(z.string()).optional(),
});
export type MemoryItem = z.infer<typeof MemoryItem>;

export const MemorySearchReply = z.object({ items: z.array(MemoryItem) });
export type MemorySearchReply = z.infer<typeof MemorySearchReply>;
