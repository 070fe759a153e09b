import type { NatsConnection } from "@nats-io/nats-core";
import type { z } from "zod";
import { requestJson } from "../bus/request.ts";
import { subjects } from "../bus/subjects.ts";
import type { IntentPatch, IntentSpec } from "../schedules/intent.ts";
import { ScheduleListReply, ScheduleReply, type ScheduleView } from "../schedules/requests.ts";

/** A schedule as created: id, session, what it does, when, its convergence condition and catch-up limit. */
export type ScheduleSpec = z.input<typeof IntentSpec>;
/** What an update changes (anything but the id and session). */
export type ScheduleChanges = z.input<typeof IntentPatch>;
export type { ScheduleView };

/**
 * Schedules (docs/schedules.md): intents that submit a turn or run a recipe
 * `at` a time, every `every_ms`, or on a `cron` expression in a time zone,
 * until cancelled or their convergence condition holds. Served by the
 * runners, which keep them on the schedule log. Bad input rejects with
 * `invalid_request`, an unknown id with `not_found`, an id in use with `conflict`.
 */
export interface SchedulesClient {
  /** Creates a schedule; resolves with it as the runners now know it (with `next_due`). */
  create(spec: ScheduleSpec): Promise<ScheduleView>;
  /** Changes a schedule; a new `when` counts its due times afresh. */
  update(id: string, changes: ScheduleChanges): Promise<ScheduleView>;
  /** Stops a schedule for good (runs already submitted go on). */
  cancel(id: string): Promise<ScheduleView>;
  /** Every schedule (of one session, when given), whatever its status. */
  list(sessionId?: string): Promise<ScheduleView[]>;
}

/** The client's `schedules`, over `conclave.schedules.manage`. */
export function schedulesClient(nc: NatsConnection, timeoutMs: number): SchedulesClient {
  const request = <S extends z.ZodType>(payload: unknown, schema: S) =>
    requestJson(nc, subjects.scheduleManage, payload, schema, { timeoutMs });
  return {
    create: async (spec) => (await request({ op: "create", intent: spec }, ScheduleReply)).schedule,
    update: async (id, changes) => (await request({ op: "update", id, patch: changes }, ScheduleReply)).schedule,
    cancel: async (id) => (await request({ op: "cancel", id }, ScheduleReply)).schedule,
    list: async (sessionId) =>
      (await request({ op: "list", ...(sessionId === undefined ? {} : { session_id: sessionId }) }, ScheduleListReply))
        .schedules,
  };
}
