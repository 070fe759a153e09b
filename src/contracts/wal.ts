import { z } from "zod";
import { SessionId, TurnId } from "./ids.ts";
import { AgentsPipeline } from "./pipeline.ts";
import { HumanAnswer, RecipeSubmission, ToolApproval } from "./recipeRun.ts";
import { TurnSubmission } from "./turn.ts";

/**
 * A turn as written to the write-ahead log (`conclave.wal.<session_id>`)
 * before its submission is acknowledged: everything needed to run it again.
 */
export const WalEntry = z.object({
  session_id: SessionId,
  turn_id: TurnId,
  text: z.string(),
  user_id: z.string().optional(),
  /** The tenant whose account submitted it (where tenants are configured): its quota of running turns applies. */
  tenant: z.string().optional(),
  idempotency_key: z.string().optional(),
  on_busy: TurnSubmission.shape.on_busy,
  /** Epoch milliseconds. */
  submitted_at: z.number(),
  /** A recipe run: the document and its inputs. */
  recipe: RecipeSubmission.optional(),
  /** A turn of the `agents` pipeline: the user's agents it runs (absent: the built-in pipeline, or `recipe`). */
  pipeline: AgentsPipeline.optional(),
  /** A suspended recipe run goes on: the answer to its human node (the rest is read from its event log). */
  resume: HumanAnswer.optional(),
  /** With `resume`: the seq of the TURN_SUSPENDED it answers (an entry for an earlier suspension is a stale copy). */
  suspension_seq: z.number().int().min(0).optional(),
});
export type WalEntry = z.infer<typeof WalEntry>;

/** pending → inflight → done | failed | expired; a recipe run may also go inflight → suspended → pending (resumed). */
export const TurnStatus = z.enum(["pending", "inflight", "suspended", "done", "failed", "expired"]);
export type TurnStatus = z.infer<typeof TurnStatus>;

export const TurnStatusRecord = z.object({
  session_id: SessionId,
  turn_id: TurnId,
  status: TurnStatus,
  submitted_at: z.number(),
  updated_at: z.number(),
  /** The runner that has (or last had) it. */
  runner: z.string().optional(),
  /** How many times a runner started it (more than 1 after a takeover). */
  attempts: z.number().int().min(0),
  /** Complete | PartialSuccess once done; why, when failed or expired. */
  outcome: z.string().optional(),
  reason: z.string().optional(),
  /** A client asked to cancel it, with this reason: a runner that takes it ends it Cancelled. */
  cancel_reason: z.string().optional(),
  /** A suspended recipe run: the human node it waits at. */
  suspended: z
    .object({
      node: z.string(),
      prompt: z.string(),
      required_role: z.string().optional(),
      expires_at: z.number().optional(),
      /** The seq of its TURN_SUSPENDED event: one resume per suspension. */
      seq: z.number().int().min(0),
      /** It waits for the approval of a tool call (answered with `conclave approve|deny`). */
      approval: ToolApproval.optional(),
    })
    .optional(),
  /**
   * The seq of the last suspension answered: a WAL entry for an earlier one
   * (e.g. the run's first entry, delivered again because its runner died
   * before its ack went out) is a stale copy, never run again.
   */
  answered_through: z.number().int().min(0).optional(),
});
/** Where one turn stands, as stored in the `conclave_turns` KV bucket. */
export type TurnStatusRecord = z.infer<typeof TurnStatusRecord>;
