import type { NatsConnection } from "@nats-io/nats-core";
import { HandlerError, isErrorCode } from "../bus/errors.ts";
import { type ServeOptions, serveFunction } from "../bus/serveActor.ts";
import type { ServiceGroup } from "../bus/service.ts";
import { subjects } from "../bus/subjects.ts";
import { summariseConversation } from "../context/compaction.ts";
import {
  MemoryCommitRequest,
  type MemoryRetrieveReply,
  MemoryRetrieveRequest,
  MemorySearchRequest,
} from "../contracts/memory.ts";
import { type MemoryInsightReply, MemoryInsightRequest } from "../contracts/memoryInsights.ts";
import type { ChatModel } from "../contracts/model.ts";
import { isConclaveError, messageOf, singleLine } from "../errors.ts";
import type { SessionMemory } from "../memory/sessionMemory.ts";
import { followErasures } from "../runtime/runner/sessionErasures.ts";

/**
 * The memory service: before a turn, recent episodes and the facts and open
 * threads that fit its message; after it, the commit that learns; search;
 * and insights (list, dismiss, review, refresh, clear the cache).
 */
export function serveMemory(
  group: ServiceGroup,
  memory: SessionMemory,
  options: ServeOptions = {},
  summariser: Summariser = {},
): void {
  serveFunction(
    group,
    {
      name: "retrieve",
      subject: subjects.memoryRetrieve,
      request: MemoryRetrieveRequest,
      // The turn's signal: its embeddings call (and its summary's) stops when the turn is cancelled or over.
      handle: (request, signal) => retrieveAndSummarise(memory, summariser, request, signal),
    },
    options,
  );
  serveFunction(
    group,
    {
      name: "commit",
      subject: subjects.memoryCommit,
      request: MemoryCommitRequest,
      handle: (request) => memory.commit(request.episode),
    },
    options,
  );
  serveFunction(
    group,
    {
      name: "search",
      subject: subjects.memoryQuery,
      request: MemorySearchRequest,
      handle: (request) => memory.search(request),
    },
    options,
  );
  serveFunction(
    group,
    {
      name: "insights",
      subject: subjects.memoryInsights,
      request: MemoryInsightRequest,
      // An unknown insight or edge (not_found), a later change (conflict): answered with their code.
      handle: (request) =>
        answerInsights(memory, request).catch((error: unknown) => {
          throw isConclaveError(error) && isErrorCode(error.code) ? new HandlerError(error.code, error.message) : error;
        }),
    },
    options,
  );
}

/** How long memory's model may take to write a compaction summary when the request does not say. */
const DEFAULT_SUMMARY_DEADLINE_MS = 5_000;

/** What writes a compaction's summary with memory's model (docs/context.md, "Compaction"). */
export interface Summariser {
  /** Memory's model; absent (the offline mode): a conversation read asked to summarise answers without. */
  model?: ChatModel | undefined;
  /** Told, in one line, that a summary could not be written (the turn then compacts offline). */
  warn?: (line: string) => void;
}

/**
 * A retrieval, or a read by reference; a turn's read of its conversation before it compacts
 * (`summarise`) also gets the summary memory's model writes of it. A failed model call costs the turn
 * only the model's summary: the arena compacts offline.
 */
async function retrieveAndSummarise(
  memory: SessionMemory,
  { model, warn }: Summariser,
  { summarise, ...request }: MemoryRetrieveRequest,
  signal: AbortSignal,
): Promise<MemoryRetrieveReply> {
  const reply = await memory.retrieve(request, signal);
  if (!summarise || !model || !request.resolve) return reply;
  const deadline = AbortSignal.timeout(summarise.deadline_ms ?? DEFAULT_SUMMARY_DEADLINE_MS);
  try {
    const summary = await summariseConversation(model, reply.episodes, summarise, AbortSignal.any([signal, deadline]));
    return summary ? { ...reply, summary } : reply;
  } catch (error) {
    const why = deadline.aborted
      ? `no answer in ${summarise.deadline_ms ?? DEFAULT_SUMMARY_DEADLINE_MS} ms`
      : messageOf(error);
    warn?.(
      `${request.session_id} turn ${request.turn_id}: the model wrote no compaction summary, the turn compacts offline: ${singleLine(why, 300)}`,
    );
    return reply;
  }
}

/** One insight request, answered by the session's MemoryInsights. */
async function answerInsights(memory: SessionMemory, request: MemoryInsightRequest): Promise<MemoryInsightReply> {
  const session = request.session_id;
  switch (request.op) {
    case "list":
      return memory.insights.list(session, request.all ?? false);
    case "refresh":
      return memory.insights.refresh(session);
    case "dismiss":
      return { dismissed: await memory.insights.dismiss(session, request.insight) };
    case "review":
      return { reviewed: await memory.insights.review(session, request.edge, request.decision) };
    case "clear_cache":
      return { cleared: await memory.insights.clearCache(session) };
  }
}

/**
 * The memory service's part in an erase: on the erase broadcast
 * (`conclave.session.erased`) it erases the session from its graph store
 * (SessionMemory.forget: on PostgreSQL the session's rows are deleted, the
 * erasing runner may not have that backend configured; on either backend
 * the in-memory copy is dropped), then answers the erasing runner as `as`
 * (e.g. `conclave-memory <service id>`), which waits for that answer. A
 * failure is warned and not answered. Returns the unsubscribe.
 */
export function followMemoryErasures(
  nc: NatsConnection,
  memory: SessionMemory,
  as: string,
  warn: (message: string) => void,
): () => void {
  return followErasures(nc, (sessionId) => memory.forget(sessionId), {
    as,
    onError: (sessionId, message) => warn(`memory copy of erased session ${sessionId} not dropped: ${message}`),
  });
}
