/**
 * The folded state of every domain of a session (the "tape" state): the
 * session snapshot, the truth and task ledgers, the cost, what the log says
 * of memory, and the session's schedules; and the cut it was folded through.
 * A replay checkpoint stores one (docs/tape.md).
 */
import { z } from "zod";
import { Ledgers } from "../../contracts/ledger.ts";
import type { CostSummary } from "../../cost/summary.ts";
import { emptyLedgers } from "../../ledgers/fold.ts";
import { IntentSpec, type IntentState } from "../../schedules/intent.ts";
import { emptySnapshot } from "../replay.ts";
import { SessionSnapshot } from "./sessionSnapshot.ts";

/**
 * Where a fold stands: every turn through `through_turn_id`, the session's
 * ledger events through stream sequence `events_seq` (the session's CONCLAVE_EVENTS_<i>), and
 * the schedule log through `schedules_seq` (CONCLAVE_SCHEDULES).
 */
export const TapeCut = z.object({
  through_turn_id: z.number().int().min(0),
  events_seq: z.number().int().min(0),
  schedules_seq: z.number().int().min(0),
  /**
   * The stream sequence the turns through `through_turn_id` end at (the session's CONCLAVE_EVENTS_<i>): the turns after
   * them are read from there in one pass. 0 (and in checkpoints written before it existed): from the start.
   */
  turns_seq: z.number().int().min(0).default(0),
});
export type TapeCut = z.infer<typeof TapeCut>;

const CostAmount = z.object({
  prompt_tokens: z.number().int().min(0),
  completion_tokens: z.number().int().min(0),
  usd: z.number(),
  unpriced_tokens: z.number().int().min(0),
});
const CostRow = CostAmount.extend({ name: z.string() });

/** The cost domain: a CostSummary folded unpriced (tokens only; prices apply when it is read). */
export const TapeCost: z.ZodType<CostSummary> = z.object({
  session_id: z.string(),
  turns: z.number().int().min(0),
  total: CostAmount,
  by_turn: z.array(CostRow),
  by_actor: z.array(CostRow.extend({ model: z.string() })),
  by_model: z.array(CostRow),
  by_skill: z.array(CostRow),
});

/**
 * The memory domain, as the log tells it: the facts themselves live in the
 * memory store (their nodes carry the turn that taught them), so the tape
 * keeps which turns' commits were stored and what the last retrieval held.
 */
export const TapeMemory = z.object({
  /** Turns whose MEMORY_COMMITTED says the episode was stored, in turn order. */
  committed_turns: z.array(z.number().int().min(1)),
  /**
   * The last completed turn's MEMORY_RETRIEVED, in short: how many of each it gave, no text (the
   * text lives only in the memory store). A checkpoint written before references also holds the
   * facts' and threads' text (`user_facts`, `open_threads`): read, and not written again.
   */
  last_retrieved: z
    .object({
      turn_id: z.number().int().min(0),
      episodes: z.number().int().min(0),
      facts: z.number().int().min(0).optional(),
      threads: z.number().int().min(0).optional(),
      procedures: z.number().int().min(0).optional(),
      user_facts: z.array(z.string()).optional(),
      open_threads: z.array(z.string()).optional(),
    })
    .nullable(),
});
export type TapeMemory = z.infer<typeof TapeMemory>;

const TapeIntent: z.ZodType<IntentState> = z.object({
  intent: IntentSpec,
  status: z.enum(["active", "cancelled", "converged", "done"]),
  created_at: z.number(),
  last_due: z.number().nullable(),
  fires: z.number().int().min(0),
  deferred: z.number().int().min(0),
  next_due: z.number().nullable().optional(),
});

/** Every domain's folded state, and the cut it was folded through. */
export const TapeState = z.object({
  session_id: z.string(),
  cut: TapeCut,
  session: SessionSnapshot,
  ledgers: Ledgers,
  cost: TapeCost,
  memory: TapeMemory,
  /** The session's schedules by intent id, as the schedule log folds them. */
  schedules: z.record(z.string(), TapeIntent),
  /**
   * The turn whose SESSION_FORKED began this session (a fork): its domains, cost included, came
   * from the source. Absent for a session that is not a fork (and in checkpoints written before it existed).
   */
  forked_at_turn: z.number().int().min(0).optional(),
  /**
   * The session's working memory, by reference (docs/knowledge.md): the version, turn and agent of its
   * last update, none of its content (that lives only in the log's WORKING_MEMORY_UPDATED, so an erase
   * of the log removes it). Absent while no agent has changed it (and in checkpoints written before it existed).
   */
  working_memory: z
    .object({ version: z.number().int().min(1), turn_id: z.number().int().min(1), agent_id: z.string() })
    .optional(),
});
export type TapeState = z.infer<typeof TapeState>;

/** An unpriced cost summary of nothing. */
export const emptyCost = (sessionId: string): CostSummary => ({
  session_id: sessionId,
  turns: 0,
  total: { prompt_tokens: 0, completion_tokens: 0, usd: 0, unpriced_tokens: 0 },
  by_turn: [],
  by_actor: [],
  by_model: [],
  by_skill: [],
});

/** Every domain of a session before its first event. */
export const emptyTape = (sessionId: string): TapeState => ({
  session_id: sessionId,
  cut: { through_turn_id: 0, events_seq: 0, schedules_seq: 0, turns_seq: 0 },
  session: emptySnapshot(),
  ledgers: emptyLedgers(sessionId),
  cost: emptyCost(sessionId),
  memory: { committed_turns: [], last_retrieved: null },
  schedules: {},
});
