import { z } from "zod";
import { SessionId, TurnId } from "./ids.ts";
import { PipelineChoice } from "./pipeline.ts";
import { RecipeSubmission } from "./recipeRun.ts";

/** Largest accepted user message, in characters. */
export const MAX_TURN_TEXT = 16_000;

/** Published (or requested) on `conclave.turn.submit.<session_id>`. */
export const TurnSubmission = z
  .object({
    /** The user's message. Optional when `recipe` is given (then it defaults to `run <recipe name>`). */
    text: z
      .string()
      .trim()
      .min(1, "text must not be empty")
      .max(MAX_TURN_TEXT, `text must be at most ${MAX_TURN_TEXT} characters`)
      .optional(),
    /** Run this recipe instead of the built-in pipeline (see docs/recipes.md). */
    recipe: RecipeSubmission.optional(),
    /**
     * The pipeline this turn and the session's later ones run (stored with the session; see
     * docs/agents.md). Absent: the one the session chose before, else the runner's default.
     * Not with `recipe`, which runs that recipe this once whatever the session's pipeline is.
     */
    pipeline: PipelineChoice.optional(),
    /** Resubmitting with the same key returns the first submission's ack and runs nothing. */
    idempotency_key: z.string().min(1).max(128).optional(),
    user_id: z.string().min(1).max(128).optional(),
    /**
     * Double-texting: what to do when the session already has a turn pending or
     * running. `enqueue` (default) runs this one after it; `reject` refuses this
     * one with a `busy` error; `interrupt` stops the running turn, which completes
     * with an `interrupted` warning, and runs this one next.
     */
    on_busy: z.enum(["enqueue", "reject", "interrupt"]).default("enqueue"),
    /**
     * How long the submitter waits for the turn to complete, in ms from sending it. A runner that
     * expects the turn to wait for a place so long (its queue, at its measured rate) that it would
     * end later answers `busy` instead of storing it. Absent: only the runner's own queue bound holds.
     */
    patience_ms: z.number().int().positive().max(86_400_000).optional(),
  })
  .refine((submission) => submission.text !== undefined || submission.recipe !== undefined, {
    message: "text is required (or a recipe to run)",
    path: ["text"],
  })
  .refine((submission) => submission.recipe === undefined || submission.pipeline === undefined, {
    message: "give a recipe to run this once or a pipeline for the session, not both",
    path: ["pipeline"],
  });
export type TurnSubmission = z.infer<typeof TurnSubmission>;

/** The reply to a submission request: where the turn's events will appear. */
export const TurnAck = z.object({
  session_id: SessionId,
  turn_id: TurnId,
  /** `conclave.events.<i>.<session_id>.<turn_id>`, for convenience. */
  events_subject: z.string(),
  /** True when this submission repeated an earlier idempotency key: nothing new was queued. */
  duplicate: z.boolean().default(false),
  /**
   * What the accepting runner expects for the turn: to start at once (`running`), or to wait
   * (`queued`, at `position`: 1 is next) because it runs as many turns as it may. A turn of a
   * session another runner owns is admitted there: its TURN_QUEUED event says so if it waits.
   * Absent from duplicates and from runners older than this field.
   */
  admission: z
    .object({ state: z.enum(["running", "queued"]), position: z.number().int().min(1).optional() })
    .optional(),
});
export type TurnAck = z.infer<typeof TurnAck>;

/** The pipeline's stages, in order. */
export const STAGES = [
  "ingest",
  "sensing_fast",
  "context",
  "agents",
  "deliberation",
  "council",
  "critics",
  "memory_commit",
] as const;
export const Stage = z.enum([...STAGES, "safety", "recipe"]);
/** A stage of the turn pipeline, `safety` (the safety interrupt), or `recipe` (a recipe run's nodes). */
export type Stage = z.infer<typeof Stage>;

/** A non-fatal problem in one stage: the turn went on without that stage's full result. */
export const TurnWarning = z.object({
  stage: Stage,
  code: z.string(),
  message: z.string(),
  /** The agent, critic or service involved, when there is one. */
  subject: z.string().optional(),
});
export type TurnWarning = z.infer<typeof TurnWarning>;

/**
 * How a turn ended: Complete, PartialSuccess carrying the warnings of each
 * stage that fell short, Failed when the turn could not run at all (its
 * session's stored state is unreadable): then nothing was said to the user,
 * or Cancelled when a client cancelled it.
 */
export const TurnOutcome = z.discriminatedUnion("status", [
  z.object({ status: z.literal("Complete") }),
  z.object({ status: z.literal("PartialSuccess"), warnings: z.array(TurnWarning).min(1) }),
  z.object({ status: z.literal("Failed"), error: z.object({ code: z.string(), message: z.string() }) }),
  /** Cancelled by a client (`cancel`, an aborted `submit`, `conclave cancel`): the turn stopped where it was. */
  z.object({ status: z.literal("Cancelled"), reason: z.string() }),
]);
export type TurnOutcome = z.infer<typeof TurnOutcome>;

export const turnOutcome = (warnings: readonly TurnWarning[]): TurnOutcome =>
  warnings.length === 0 ? { status: "Complete" } : { status: "PartialSuccess", warnings: [...warnings] };

export { SessionId, TurnId };

/** Requested on `conclave.turn.cancel.<session_id>`: stop a turn, wherever it runs. */
export const CancelRequest = z.object({
  turn_id: TurnId,
  /** Why, recorded in the `Cancelled` outcome. Default: "cancelled by the client". */
  reason: z.string().trim().min(1).max(500).optional(),
});
export type CancelRequest = z.infer<typeof CancelRequest>;

/** The reply to a cancel request. */
export const CancelReply = z.object({
  session_id: SessionId,
  turn_id: TurnId,
  /**
   * `cancelling`: the turn is pending or running and ends `Cancelled` (its
   * TURN_COMPLETED says so); `finished`: it had already ended, with `outcome`.
   */
  status: z.enum(["cancelling", "finished"]),
  outcome: z.string().optional(),
});
export type CancelReply = z.infer<typeof CancelReply>;

/** Broadcast on `conclave.turn.cancelled` to every runner and worker: stop this turn's work. */
export const TurnCancelled = z.object({ session_id: SessionId, turn_id: TurnId, reason: z.string() });
export type TurnCancelled = z.infer<typeof TurnCancelled>;

/**
 * Broadcast on `conclave.turn.ended` to every worker when a turn ends here, for any reason, or is taken
 * over (`taken_over`: the attempt before this one ended): the calls still open for it are abandoned and
 * stop. Unlike a cancellation it is not remembered: a call that starts after it (a new attempt's) runs.
 */
export const TurnEnded = z.object({
  session_id: SessionId,
  turn_id: TurnId,
  /** `done`, `failed`, `expired`, `suspended` (the turn's status), or `taken_over`. */
  reason: z.string().max(100),
});
export type TurnEnded = z.infer<typeof TurnEnded>;

/** `TurnEnded.reason` of the attempt a runner took a turn over from: workers spare its steps (the new attempt joins them). */
export const TURN_TAKEN_OVER = "taken_over";
