import { z } from "zod";
import { SessionId } from "../contracts/ids.ts";
import { JsonObject } from "../contracts/recipeRun.ts";

/** An intent's id: letters, digits, `_` and `-` (it is a subject token and a KV key part). */
export const IntentId = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, "an intent id is 1–64 letters, digits, _ or -");

/** What an intent does when it fires: submit a turn's text, or run a recipe document with inputs. */
export const IntentAction = z.union([
  z.object({ text: z.string().trim().min(1).max(10_000) }).strict(),
  z.object({ recipe: z.object({ document: JsonObject, inputs: JsonObject.default({}) }).strict() }).strict(),
]);
export type IntentAction = z.infer<typeof IntentAction>;

/**
 * When an intent is due: once `at` (epoch ms), every `every_ms` from `start_ms`
 * (first due one interval after it), or on a cron expression in a time zone
 * (IANA name, default UTC) after `start_ms`.
 */
export const IntentWhen = z.union([
  z.object({ at: z.number().int().min(0) }).strict(),
  z.object({ every_ms: z.number().int().min(100), start_ms: z.number().int().min(0).optional() }).strict(),
  z
    .object({
      cron: z.string().min(1).max(200),
      tz: z.string().min(1).max(64).optional(),
      start_ms: z.number().int().min(0).optional(),
    })
    .strict(),
]);
export type IntentWhen = z.infer<typeof IntentWhen>;

/** What a predicate compares the value at `path` with; exactly one test. */
const PredicateTests = {
  eq: z.unknown(),
  ne: z.unknown(),
  exists: z.boolean(),
  gt: z.number(),
  gte: z.number(),
  lt: z.number(),
  lte: z.number(),
};

/**
 * A test of one fact of the run a schedule fired: `path` is dotted, rooted at
 * `outcome` (the turn's outcome: `outcome.status` is Complete, PartialSuccess,
 * Failed or Cancelled), `blackboard` (a recipe run's final blackboard),
 * `response`, `turn_id` or `fires` (how many times the intent has fired).
 */
export const SchedulePredicate = z
  .object({ path: z.string().regex(/^(outcome|blackboard|response|turn_id|fires)(\.[^.]+)*$/), ...PredicateTests })
  .partial({ eq: true, ne: true, exists: true, gt: true, gte: true, lt: true, lte: true })
  .strict()
  .refine(
    (predicate) => Object.keys(PredicateTests).filter((test) => test in predicate).length === 1,
    "a predicate has exactly one of eq, ne, exists, gt, gte, lt, lte",
  );
export type SchedulePredicate = z.infer<typeof SchedulePredicate>;

/** A convergence condition: all or any of its parts hold (parts are predicates or nested conditions). */
export type ScheduleCondition =
  | { all_of: (SchedulePredicate | ScheduleCondition)[] }
  | { any_of: (SchedulePredicate | ScheduleCondition)[] };
/** The schema of a ScheduleCondition (recursive: conditions nest). */
export const ScheduleCondition: z.ZodType<ScheduleCondition> = z.lazy(() =>
  z.union([
    z.object({ all_of: z.array(z.union([SchedulePredicate, ScheduleCondition])).min(1) }).strict(),
    z.object({ any_of: z.array(z.union([SchedulePredicate, ScheduleCondition])).min(1) }).strict(),
  ]),
);

/** What a schedule is created with (the client's `schedules.create`). */
export const IntentSpec = z
  .object({
    id: IntentId,
    session_id: SessionId,
    what: IntentAction,
    when: IntentWhen,
    /** Checked after each run the intent fires: when it holds, the intent stops (`converged`). */
    convergence: ScheduleCondition.optional(),
    /** How many missed due times are fired after downtime; the rest are deferred (one event). Default 1. */
    catch_up_max: z.number().int().min(0).max(100).default(1),
  })
  .strict();
export type IntentSpec = z.infer<typeof IntentSpec>;

/** What an update may change: anything but the id and session. */
export const IntentPatch = IntentSpec.omit({ id: true, session_id: true }).partial().strict();
export type IntentPatch = z.infer<typeof IntentPatch>;

/** One event of the schedule log (stream CONCLAVE_SCHEDULES), one subject per intent. */
export const ScheduleEvent = z.discriminatedUnion("kind", [
  z.object({ kind: z.literal("created"), at: z.number(), intent: IntentSpec }),
  z.object({ kind: z.literal("updated"), at: z.number(), id: IntentId, patch: IntentPatch }),
  z.object({ kind: z.literal("cancelled"), at: z.number(), id: IntentId }),
  z.object({
    kind: z.literal("fired"),
    at: z.number(),
    id: IntentId,
    due: z.number(),
    runner: z.string(),
    turn_id: z.number().optional(),
    error: z.string().optional(),
  }),
  /** Missed due times past `catch_up_max`: not run; the intent goes on from the next due time. */
  z.object({
    kind: z.literal("deferred"),
    at: z.number(),
    id: IntentId,
    count: z.number(),
    first: z.number(),
    last: z.number(),
  }),
  z.object({ kind: z.literal("converged"), at: z.number(), id: IntentId, due: z.number(), turn_id: z.number() }),
  /** Its session was erased: the intent is gone, and so are its earlier events (this one holds no content). */
  z.object({ kind: z.literal("erased"), at: z.number(), id: IntentId }),
]);
export type ScheduleEvent = z.infer<typeof ScheduleEvent>;

/** Where an intent stands, folded from its log. */
export interface IntentState {
  intent: IntentSpec;
  status: "active" | "cancelled" | "converged" | "done";
  created_at: number;
  /** The last due time handled (fired or deferred); due times after it are still to come. */
  last_due: number | null;
  fires: number;
  deferred: number;
  /** The next due time, when active (filled in by whoever lists). */
  next_due?: number | null;
}
