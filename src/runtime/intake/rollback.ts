import { asHandlerError, HandlerError, respondWithError } from "../../bus/errors.ts";
import { isInboxReply } from "../../bus/replies.ts";
import { requestJson } from "../../bus/request.ts";
import type { ServiceMsg } from "../../bus/service.ts";
import { subjects } from "../../bus/subjects.ts";
import { addressOf } from "../../bus/tenancy.ts";
import { decodeMessage, respondJson } from "../../bus/wire.ts";
import type { EngineEvent } from "../../contracts/events.ts";
import { type RollbackReply, RollbackRequest, ToolCallReply, type ToolCallRequest } from "../../contracts/tool.ts";
import { turnKey, turnLabel } from "../../contracts/turnKey.ts";
import { messageOf, singleLine } from "../../errors.ts";
import { eventStreamCount } from "../../eventlog/eventStreams.ts";
import { EventLogWriter } from "../../eventlog/writer.ts";
import { readForTakeover } from "../runner/takeover.ts";
import { DEFAULT_TOOL_TIMEOUT_MS } from "../toolCalls/turnToolCalls.ts";
import type { CancelDeps } from "./cancel.ts";

/** Largest accepted rollback request, in bytes. */
const MAX_ROLLBACK_BYTES = 1_024;

type Finished = Extract<EngineEvent, { kind: "TOOL_CALL_FINISHED" }>;
type Requested = Extract<EngineEvent, { kind: "TOOL_CALL_REQUESTED" }>;

/**
 * The calls of a turn's log a rollback undoes, last first: finished live
 * write calls that were not dry runs and are not rolled back already.
 */
export function callsToUndo(events: readonly EngineEvent[]): { finished: Finished; requested: Requested }[] {
  const requested = new Map<string, Requested>();
  const undone = new Set<string>();
  const finished: Finished[] = [];
  for (const event of events) {
    if (event.kind === "TOOL_CALL_REQUESTED") requested.set(event.payload.call_id, event);
    else if (event.kind === "TOOL_CALL_FINISHED" && event.payload.ok && !event.payload.simulated) finished.push(event);
    else if (event.kind === "TOOL_CALL_ROLLED_BACK" && event.payload.ok) undone.add(event.payload.call_id);
  }
  return finished
    .flatMap((event) => {
      const asked = requested.get(event.payload.call_id);
      const write = asked?.payload.effect === "write" && asked.payload.mode === "live";
      return write && !undone.has(event.payload.call_id) ? [{ finished: event, requested: asked }] : [];
    })
    .reverse();
}

/**
 * Undoes a finished turn's executed write calls (`conclave.turn.rollback.<session>`,
 * any runner serves it), last first, each through its tool's `rollback`
 * (given the call's arguments as the log keeps them and its result), and
 * appends a TOOL_CALL_ROLLED_BACK per call to the turn's log. A call rolled
 * back already is not undone twice; a turn still running or waiting is
 * refused (`conflict`).
 */
export async function serveRollback(deps: CancelDeps, msg: ServiceMsg): Promise<void> {
  try {
    const { sessionId, view, tenant } = addressOf(msg.subject);
    if (tenant) throw new HandlerError("invalid_request", "tenants cannot roll turns back yet");
    const request = decodeMessage(msg, RollbackRequest, `rollback request for session ${view}`, MAX_ROLLBACK_BYTES);
    const turnId = request.turn_id;
    // Its log says whether it ended (its status says so a moment later).
    const stored = await readForTakeover(deps.js, deps.jsm, sessionId, turnId);
    if (!stored.kinds.includes("TURN_COMPLETED")) {
      const status = await deps.statuses.get(sessionId, turnId);
      if (!status && stored.events.length === 0)
        throw new HandlerError("not_found", `session ${view} has no turn ${turnId}`);
      throw new HandlerError(
        "conflict",
        `turn ${turnId} is ${status?.status ?? "running"}: roll it back once it has ended`,
      );
    }
    const undo = callsToUndo(stored.events);
    const writer = new EventLogWriter(deps.js, await eventStreamCount(deps.jsm));
    writer.open(sessionId, turnId, stored.events, stored.lastStreamSeq);
    const calls: RollbackReply["calls"] = [];
    for (const { finished, requested } of undo) {
      const { call_id, tool, agent_id, node } = finished.payload;
      const call: ToolCallRequest = {
        session_id: sessionId,
        turn_id: turnId,
        call_id,
        idempotency_key: `${turnKey(sessionId, turnId)}.${call_id}.rollback`,
        tool,
        args: requested.payload.args,
        mode: "rollback",
        timeout_ms: DEFAULT_TOOL_TIMEOUT_MS,
        undo: { args: requested.payload.args, result: finished.payload.result },
      };
      const ref = { call_id, tool, agent_id, ...(node ? { node } : {}) };
      try {
        const reply = await requestJson(deps.nc, subjects.tool(tool), call, ToolCallReply, {
          timeoutMs: DEFAULT_TOOL_TIMEOUT_MS + 1_000,
        });
        writer.append(sessionId, turnId, {
          kind: "TOOL_CALL_ROLLED_BACK",
          payload: { ...ref, ok: true, result: reply.result },
        });
        calls.push({ call_id, tool, ok: true });
      } catch (error) {
        const message = singleLine(messageOf(error), 500);
        writer.append(sessionId, turnId, {
          kind: "TOOL_CALL_ROLLED_BACK",
          payload: { ...ref, ok: false, error: message },
        });
        calls.push({ call_id, tool, ok: false, error: message });
      }
    }
    await writer.finish(sessionId, turnId);
    deps.log.info(
      `${turnLabel(sessionId, turnId)}: rolled back ${calls.filter((call) => call.ok).length} of ${calls.length} write call(s)`,
    );
    const reply: RollbackReply = { session_id: view, turn_id: turnId, calls };
    if (isInboxReply(msg.reply, "runner")) respondJson(msg, reply);
  } catch (error) {
    const failure = asHandlerError(error);
    deps.log.warn(`rollback on ${msg.subject}: ${singleLine(failure.message)}`);
    if (isInboxReply(msg.reply, "runner")) respondWithError(msg, failure);
  }
}
