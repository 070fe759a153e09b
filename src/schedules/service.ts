import { encodeJson } from "../bus/codec.ts";
import { HandlerError, STATUS_BY_CODE } from "../bus/errors.ts";
import { isInboxReply } from "../bus/replies.ts";
import type { ServiceGroup, ServiceMsg } from "../bus/service.ts";
import { subjects } from "../bus/subjects.ts";
import { decodeMessage, respondJson } from "../bus/wire.ts";
import { isConclaveError, messageOf } from "../errors.ts";
import type { Logger } from "../telemetry/log.ts";
import type { IntentSpec, IntentState } from "./intent.ts";
import { checkWhen } from "./nextDue.ts";
import { ScheduleRequest, type ScheduleView } from "./requests.ts";
import type { ScheduleLog } from "./scheduleLog.ts";

/** What the schedule endpoint reads and writes. */
export interface ScheduleServiceParts {
  log: ScheduleLog;
  /** The runner's fold of the log. */
  intents: ReadonlyMap<string, IntentState>;
  /** Resolves once the fold has seen the log up to a sequence. */
  seen(seq: number): Promise<void>;
  nextDue(state: IntentState): number | null;
  logger: Logger;
}

/** Serves `conclave.schedules.manage` on the runner's service (queue group: each request to one runner). */
export function serveSchedules(service: ServiceGroup, parts: ScheduleServiceParts): void {
  service.addEndpoint("schedules", {
    subject: subjects.scheduleManage,
    handler: (msg) => {
      // Answers only on a requester's inbox: a reply subject naming a data subject would lend it the runner's rights.
      if (!isInboxReply(msg.reply, "runner")) return;
      void answer(msg, parts);
    },
  });
}

/** Largest schedule request, in bytes (a recipe document included). */
const MAX_SCHEDULE_REQUEST_BYTES = 262_144;

async function answer(msg: ServiceMsg, parts: ScheduleServiceParts): Promise<void> {
  const fail = (error: HandlerError) =>
    msg.respondError(
      STATUS_BY_CODE[error.code],
      error.message,
      encodeJson({
        error: { code: error.code, message: error.message, ...(error.issues ? { issues: error.issues } : {}) },
      }),
    );
  try {
    const request = decodeMessage(msg, ScheduleRequest, "schedule request", MAX_SCHEDULE_REQUEST_BYTES);
    // What another runner wrote a moment ago is part of the answer.
    await parts.seen(await parts.log.lastSeq());
    const view = (state: IntentState): ScheduleView => ({ ...state, next_due: parts.nextDue(state) });
    if (request.op === "list") {
      const schedules = [...parts.intents.values()]
        .filter((state) => request.session_id === undefined || state.intent.session_id === request.session_id)
        .map(view);
      respondJson(msg, { schedules });
      return;
    }
    const at = Date.now();
    let seq: number;
    if (request.op === "create") {
      const intent = withStart(request.intent, at);
      checkWhen(intent.when);
      try {
        seq = await parts.log.append({ kind: "created", at, intent }, true);
      } catch (error) {
        if (!/wrong last sequence/i.test(messageOf(error))) throw error;
        throw new HandlerError("conflict", `schedule ${intent.id} exists (cancel it, or update it)`);
      }
    } else {
      const state = parts.intents.get(request.id);
      if (!state) throw new HandlerError("not_found", `no schedule ${request.id}`);
      if (request.op === "update") {
        const { when } = request.patch;
        const patch = when ? { ...request.patch, when: withStart({ ...state.intent, when }, at).when } : request.patch;
        if (patch.when) checkWhen(patch.when);
        seq = await parts.log.append({ kind: "updated", at, id: request.id, patch });
      } else {
        seq = await parts.log.append({ kind: "cancelled", at, id: request.id });
      }
    }
    await parts.seen(seq);
    const id = request.op === "create" ? request.intent.id : request.id;
    const state = parts.intents.get(id);
    if (!state) throw new Error(`schedule ${id} missing from the log after writing it`);
    respondJson(msg, { schedule: view(state) });
  } catch (error) {
    if (error instanceof HandlerError) fail(error);
    else if (isConclaveError(error, "invalid_request")) fail(new HandlerError("invalid_request", error.message));
    else {
      parts.logger.warn(`schedule request failed: ${messageOf(error)}`);
      fail(new HandlerError("internal", messageOf(error)));
    }
  }
}

/** Intervals and cron schedules count from their `start_ms`, when the request set none: now. */
function withStart(intent: IntentSpec, now: number): IntentSpec {
  const { when } = intent;
  if ("at" in when || when.start_ms !== undefined) return intent;
  return { ...intent, when: { ...when, start_ms: now } };
}
