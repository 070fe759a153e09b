import { z } from "zod";
import { SessionId } from "../contracts/ids.ts";
import { IntentId, IntentPatch, IntentSpec } from "./intent.ts";

/** Requested on `conclave.schedules.manage`: one operation on the schedules. */
export const ScheduleRequest = z.discriminatedUnion("op", [
  z.object({ op: z.literal("create"), intent: IntentSpec }),
  z.object({ op: z.literal("update"), id: IntentId, patch: IntentPatch }),
  z.object({ op: z.literal("cancel"), id: IntentId }),
  z.object({ op: z.literal("list"), session_id: SessionId.optional() }),
]);
export type ScheduleRequest = z.input<typeof ScheduleRequest>;

const Status = z.enum(["active", "cancelled", "converged", "done"]);

/** An intent as the runners know it: its spec, where it stands, and its next due time when active. */
export const ScheduleView = z.object({
  intent: IntentSpec,
  status: Status,
  created_at: z.number(),
  last_due: z.number().nullable(),
  fires: z.number(),
  deferred: z.number(),
  next_due: z.number().nullable().optional(),
});
export type ScheduleView = z.infer<typeof ScheduleView>;

/** The reply to create, update and cancel: the intent after the change. */
export const ScheduleReply = z.object({ schedule: ScheduleView });
/** The reply to list. */
export const ScheduleListReply = z.object({ schedules: z.array(ScheduleView) });
