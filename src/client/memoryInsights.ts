import type { NatsConnection } from "@nats-io/nats-core";
import { requestJson } from "../bus/request.ts";
import { subjects } from "../bus/subjects.ts";
import { checkSessionId } from "../contracts/ids.ts";
import {
  type EvolvesEdgeReview,
  type MemoryInsight,
  MemoryInsightReply,
  type MemoryInsightRequest,
} from "../contracts/memoryInsights.ts";
import { InvalidRequestError } from "../errors.ts";

/** A decision on a fact's change (its `evolves` edge): `accept` keeps the new value, `reject` restores the earlier one. */
export interface EvolvesEdgeDecision {
  /** The edge's id: its earlier value's node (`prior.fact.<key>.<turn>`), as an insight's `edge` names it. */
  edge: string;
  decision: "accept" | "reject";
}

/** What a refresh answered. */
export interface InsightsRefresh {
  /** Whether the insights were derived again (the session's memory changed since they last were). */
  refreshed: boolean;
  /** The open insights. */
  insights: MemoryInsight[];
}

/** The insight methods of `client.memory` (docs/memory.md, "Insights"). */
export interface MemoryInsightsClient {
  /**
   * The session's open insights (with `all`, the dismissed ones too), ordered by id: derived
   * again first if its memory changed. Each rests on `evidence` (memory graph node ids).
   */
  insights(sessionId: string, options?: { all?: boolean }): Promise<MemoryInsight[]>;
  /**
   * Dismisses an insight: it is never raised again for the same observation. Rejects with
   * `not_found` for an insight the session does not have.
   */
  dismissInsight(sessionId: string, insightId: string): Promise<MemoryInsight>;
  /**
   * Accepts or rejects a fact's change: `reject` restores the earlier value, which retrieval and
   * search then give. Rejects with `not_found` for an edge the session does not have (or one
   * already reviewed), `conflict` when the fact changed again since.
   */
  reviewEvolvesEdge(sessionId: string, review: EvolvesEdgeDecision): Promise<EvolvesEdgeReview>;
  /** Derives the session's insights again, only if its memory changed since they last were. */
  refreshIfNeeded(sessionId: string): Promise<InsightsRefresh>;
  /**
   * Has the memory service drop what it caches in process of the session (its in-memory graph):
   * the next read loads it again from the store. What was dropped (`["graph"]`, or `[]` when it
   * held nothing of the session).
   */
  clearSessionCache(sessionId: string): Promise<{ cleared: string[] }>;
}

/** The insight methods, over requests to a runner (`conclave.memory.insight.<session>`). */
export function memoryInsightsClient(nc: NatsConnection, timeoutMs: number): MemoryInsightsClient {
  const ask = (request: MemoryInsightRequest) => {
    checkSessionId(request.session_id);
    return requestJson(nc, subjects.memoryInsight(request.session_id), request, MemoryInsightReply, {
      timeoutMs: Math.max(timeoutMs, 10_000),
    });
  };
  return {
    insights: async (sessionId, options = {}) =>
      (await ask({ op: "list", session_id: sessionId, ...(options.all ? { all: true } : {}) })).insights ?? [],
    dismissInsight: async (sessionId, insightId) => {
      const reply = await ask({ op: "dismiss", session_id: sessionId, insight: insightId });
      if (!reply.dismissed) throw new InvalidRequestError("the memory service did not answer the dismissal");
      return reply.dismissed;
    },
    reviewEvolvesEdge: async (sessionId, { edge, decision }) => {
      if (decision !== "accept" && decision !== "reject")
        throw new InvalidRequestError(`bad decision ${String(decision)}: accept or reject`);
      const reply = await ask({ op: "review", session_id: sessionId, edge, decision });
      if (!reply.reviewed) throw new InvalidRequestError("the memory service did not answer the review");
      return reply.reviewed;
    },
    refreshIfNeeded: async (sessionId) => {
      const reply = await ask({ op: "refresh", session_id: sessionId });
      return { refreshed: reply.refreshed ?? false, insights: reply.insights ?? [] };
    },
    clearSessionCache: async (sessionId) => ({
      cleared: (await ask({ op: "clear_cache", session_id: sessionId })).cleared ?? [],
    }),
  };
}
