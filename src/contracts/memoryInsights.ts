/**
 * Memory insights (docs/memory.md, "Insights"): what the memory service observes of a session's
 * graph (a recurring topic, a fact whose value changed, a thread left open), the review of a
 * changed fact (its `evolves` edge), and the service's in-process cache. The requests a client
 * makes (`conclave.memory.insight.<session>`, relayed by a runner to the memory service), their
 * replies, and the events a runner records of them on the session's log
 * (`conclave.events.<i>.<session>.memory.insights`), which name insights and edges by id only.
 */
import { z } from "zod";
import { SessionId, TurnId } from "./ids.ts";

/** An insight's id: `insight.<kind>.<hash>` (no text of the session). */
export const InsightId = z.string().regex(/^insight\.[a-z_]+\.[0-9a-f]{16}$/, "an insight id is insight.<kind>.<hash>");

/** What an insight observes: a topic of many turns, a fact whose value changed, a thread long open. */
export const InsightKind = z.enum(["recurring_topic", "fact_evolved", "stale_thread"]);

/** One insight, as a client reads it. */
export const MemoryInsight = z.object({
  id: InsightId,
  kind: InsightKind,
  /** One short line, made of what the memory graph holds. */
  text: z.string().max(500),
  /** The memory graph nodes it rests on (`episode.<turn>`, `fact.<key>`, `thread.<key>`, `prior.…`). */
  evidence: z.array(z.string()).max(20),
  /** The turns it rests on, ascending. */
  turns: z.array(TurnId).max(1_000),
  status: z.enum(["open", "dismissed"]),
  /** A `fact_evolved` insight's: the `evolves` edge to review (its prior value node's id). */
  edge: z.string().optional(),
});
export type MemoryInsight = z.infer<typeof MemoryInsight>;

/** The id of an `evolves` edge: the node of the value it evolved from (`prior.fact.<key>.<turn>`). */
export const EvolvesEdgeId = z.string().regex(/^prior\.[A-Za-z0-9_.:-]{1,122}$/, "an evolves edge id is prior.<…>");

/** Requested on `conclave.memory.insight.<session>` (and relayed on `conclave.memory.insights`). */
export const MemoryInsightRequest = z.discriminatedUnion("op", [
  /** The session's open insights (derived again first if the graph changed); `all` adds the dismissed. */
  z.object({ op: z.literal("list"), session_id: SessionId, all: z.boolean().optional() }),
  /** Dismisses an insight: it is never raised again for the same observation. */
  z.object({ op: z.literal("dismiss"), session_id: SessionId, insight: InsightId }),
  /** Accepts or rejects a fact's change (its `evolves` edge): reject restores the earlier value. */
  z.object({
    op: z.literal("review"),
    session_id: SessionId,
    edge: EvolvesEdgeId,
    decision: z.enum(["accept", "reject"]),
  }),
  /** Derives the insights again, only if the graph changed since they last were. */
  z.object({ op: z.literal("refresh"), session_id: SessionId }),
  /** Drops what the memory service caches in process of the session (the next read loads it again). */
  z.object({ op: z.literal("clear_cache"), session_id: SessionId }),
]);
export type MemoryInsightRequest = z.infer<typeof MemoryInsightRequest>;

/** A reviewed `evolves` edge: from the earlier value to the fact, and what was decided. */
export const EvolvesEdgeReview = z.object({
  edge: EvolvesEdgeId,
  from: z.string(),
  to: z.string(),
  status: z.enum(["accepted", "rejected"]),
});
export type EvolvesEdgeReview = z.infer<typeof EvolvesEdgeReview>;

/** The memory service's answer to a MemoryInsightRequest (each op fills its fields). */
export const MemoryInsightReply = z.object({
  /** `list`, `refresh`: the open insights (`list` with `all`: the dismissed too), ordered by id. */
  insights: z.array(MemoryInsight).optional(),
  /** `refresh`: whether they were derived again (the graph had changed). */
  refreshed: z.boolean().optional(),
  /** Insights raised for the first time by this request (the runner records each). */
  raised: z.array(z.object({ id: InsightId, kind: InsightKind })).optional(),
  /** `dismiss`: the insight, dismissed. */
  dismissed: MemoryInsight.optional(),
  /** `review`: the edge, reviewed. */
  reviewed: EvolvesEdgeReview.optional(),
  /** `clear_cache`: what was dropped (`graph`: the session's in-memory graph), empty when nothing was held. */
  cleared: z.array(z.string()).optional(),
});
export type MemoryInsightReply = z.infer<typeof MemoryInsightReply>;

/** The events of insights on a session's log (`…<session>.memory.insights`), by id, no text. */
export const MemoryInsightEvent = z.discriminatedUnion("kind", [
  /** The memory service raised an insight (a refresh derived it for the first time). */
  z.object({
    kind: z.literal("MEMORY_INSIGHT_RECORDED"),
    session_id: SessionId,
    at: z.string(),
    payload: z.object({ insight: InsightId, insight_kind: InsightKind }),
  }),
  /** A client dismissed an insight. */
  z.object({
    kind: z.literal("MEMORY_INSIGHT_DISMISSED"),
    session_id: SessionId,
    at: z.string(),
    payload: z.object({ insight: InsightId, by: z.string() }),
  }),
  /** A client accepted or rejected a fact's change. */
  z.object({
    kind: z.literal("MEMORY_EDGE_REVIEWED"),
    session_id: SessionId,
    at: z.string(),
    payload: EvolvesEdgeReview.extend({ by: z.string() }),
  }),
  /** A client had the memory service drop its cache of the session. */
  z.object({
    kind: z.literal("MEMORY_CACHE_CLEARED"),
    session_id: SessionId,
    at: z.string(),
    payload: z.object({ cleared: z.array(z.string()), by: z.string() }),
  }),
]);
export type MemoryInsightEvent = z.infer<typeof MemoryInsightEvent>;

/** The kinds of MemoryInsightEvent. */
export const MEMORY_INSIGHT_EVENT_KINDS = MemoryInsightEvent.options.map((option) => option.shape.kind.value);
