import { encodeRecord } from "../../bus/codec.ts";
import { asRelayedError, HandlerError, respondWithError } from "../../bus/errors.ts";
import { isInboxReply } from "../../bus/replies.ts";
import { requestJson } from "../../bus/request.ts";
import type { ServiceMsg } from "../../bus/service.ts";
import { subjects } from "../../bus/subjects.ts";
import { addressOf } from "../../bus/tenancy.ts";
import { decodeMessage, respondJson } from "../../bus/wire.ts";
import {
  MemoryInsightEvent,
  MemoryInsightReply,
  MemoryInsightRequest,
  type MemoryInsightRequest as Request,
} from "../../contracts/memoryInsights.ts";
import { singleLine } from "../../errors.ts";
import { eventStreamCount } from "../../eventlog/eventStreams.ts";
import type { CancelDeps } from "./cancel.ts";

type EventOf = MemoryInsightEvent;

/**
 * The events a request and its reply make on the session's log (by id, no text): each insight
 * raised, the dismissal, the review, the cleared cache.
 */
export function insightEvents(sessionId: string, request: Request, reply: MemoryInsightReply, at: string): EventOf[] {
  const by = "user";
  const events: EventOf[] = (reply.raised ?? []).map((insight) => ({
    kind: "MEMORY_INSIGHT_RECORDED",
    session_id: sessionId,
    at,
    payload: { insight: insight.id, insight_kind: insight.kind },
  }));
  if (request.op === "dismiss" && reply.dismissed)
    events.push({
      kind: "MEMORY_INSIGHT_DISMISSED",
      session_id: sessionId,
      at,
      payload: { insight: reply.dismissed.id, by },
    });
  if (request.op === "review" && reply.reviewed)
    events.push({ kind: "MEMORY_EDGE_REVIEWED", session_id: sessionId, at, payload: { ...reply.reviewed, by } });
  if (request.op === "clear_cache")
    events.push({
      kind: "MEMORY_CACHE_CLEARED",
      session_id: sessionId,
      at,
      payload: { cleared: reply.cleared ?? [], by },
    });
  return events.map((event) => MemoryInsightEvent.parse(event));
}

/**
 * A client's insight request on a session's memory (`conclave.memory.insight.<session>`): the
 * runner checks it, relays it to the memory service (`conclave.memory.insights`, which only
 * runners may ask), records what it did on the session's log
 * (`conclave.events.<i>.<session>.memory.insights`: MEMORY_INSIGHT_RECORDED, …_DISMISSED,
 * MEMORY_EDGE_REVIEWED, MEMORY_CACHE_CLEARED), then answers with the service's reply.
 */
export async function serveMemoryInsights(deps: CancelDeps, msg: ServiceMsg): Promise<void> {
  try {
    const { sessionId, view, tenant } = addressOf(msg.subject);
    if (tenant) throw new HandlerError("forbidden", "memory insights are not served to tenants yet");
    const request = decodeMessage(msg, MemoryInsightRequest, `memory insight request for session ${view}`, 8_192);
    if (request.session_id !== view)
      throw new HandlerError("invalid_request", `the request names session ${request.session_id}, the subject ${view}`);
    const reply = await requestJson(deps.nc, subjects.memoryInsights, request, MemoryInsightReply, {
      timeoutMs: 10_000,
    });
    const events = insightEvents(sessionId, request, reply, new Date().toISOString());
    if (events.length > 0) {
      const subject = subjects.insightEvents(sessionId, await eventStreamCount(deps.jsm));
      for (const event of events) await deps.js.publish(subject, encodeRecord(event), { timeout: 5_000 });
    }
    if (isInboxReply(msg.reply, "runner")) respondJson(msg, reply);
  } catch (error) {
    // The memory service's answer (an unknown edge, no memory worker) is passed on with its code.
    const failure = asRelayedError(error);
    deps.log.warn(`memory insight request on ${msg.subject}: ${singleLine(failure.message)}`);
    if (isInboxReply(msg.reply, "runner")) respondWithError(msg, failure);
  }
}
