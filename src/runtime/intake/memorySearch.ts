import { asHandlerError, HandlerError, respondWithError } from "../../bus/errors.ts";
import { isInboxReply } from "../../bus/replies.ts";
import { requestJson } from "../../bus/request.ts";
import type { ServiceMsg } from "../../bus/service.ts";
import { subjects } from "../../bus/subjects.ts";
import { addressOf } from "../../bus/tenancy.ts";
import { decodeMessage, respondJson } from "../../bus/wire.ts";
import { MemorySearchReply, MemorySearchRequest } from "../../contracts/memory.ts";
import { singleLine } from "../../errors.ts";
import type { CancelDeps } from "./cancel.ts";

/**
 * A client searches a session's memory (`conclave.memory.search.<session>`,
 * or a tenant's `conclave.tenant.<tenant>.memory.search.<session>`):
 * the runner checks the request and relays it to the memory service
 * (`conclave.memory.query`, on the workers), which only runners may ask.
 */
export async function serveMemorySearch(deps: CancelDeps, msg: ServiceMsg): Promise<void> {
  try {
    const { sessionId, view } = addressOf(msg.subject);
    const request = decodeMessage(msg, MemorySearchRequest, `memory search for session ${view}`, 8_192);
    if (request.session_id !== view)
      throw new HandlerError("invalid_request", `the request names session ${request.session_id}, the subject ${view}`);
    // A tenant names its session as it knows it; memory keeps it under the runtime's id.
    const reply = await requestJson(
      deps.nc,
      subjects.memoryQuery,
      { ...request, session_id: sessionId },
      MemorySearchReply,
      { timeoutMs: 5_000 },
    );
    if (isInboxReply(msg.reply, "runner")) respondJson(msg, reply);
  } catch (error) {
    const failure = asHandlerError(error);
    deps.log.warn(`memory search on ${msg.subject}: ${singleLine(failure.message)}`);
    if (isInboxReply(msg.reply, "runner")) respondWithError(msg, failure);
  }
}
