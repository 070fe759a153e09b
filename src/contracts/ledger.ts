import { z } from "zod";
import { SessionId } from "./ids.ts";
import { MAX_SESSION_SKILLS, SessionSkillActivation, SessionSkillEventPayloads } from "./skillActivations.ts";
import { SupplementEventPayloads, SupplementsState } from "./supplement.ts";
import { emptyWorkerResults, WorkerResultEventPayloads, WorkerResultsState } from "./workerResults.ts";

/**
 * The truth and task ledgers of a session: what is held true, with
 * its evidence, and what is being worked on (a spec, items, blockers). They
 * are stored as events on the session's log (`conclave.events.<i>.<session>.ledger.entries`)
 * and folded from it, so a replay reproduces them; a projection in KV keeps the
 * fold for fast reads.
 */

/** Ids of facts, items and blockers: given by the writer, or derived from the text. */
export const LedgerItemId = z
  .string()
  .regex(/^[A-Za-z0-9_.:-]{1,64}$/, "an id is 1-64 characters of A-Z, a-z, 0-9, '_', '.', ':' or '-'");

/**
 * Who changed a ledger, as the runner that stored the change knew it — never
 * as the request said: `user` for a client of the runtime's account (role
 * `client`), `user:<user_id>` when it named the end user it acts for,
 * `tenant:<name>` for a tenant (its account's name), `agent:<id>` for an
 * agent writing through `ctx.ledgers` (a worker's request on
 * `conclave.agentledger.<session>`, which only the worker role may publish).
 */
export const LedgerActor = z.string().min(1).max(128);

/** The end user a client makes a ledger change for (recorded as `user:<user_id>`). */
export const LedgerUserId = z.string().min(1).max(120);

/** A ledger text: trimmed, not empty, at most `max` characters. */
export const LedgerText = (max: number) => z.string().trim().min(1).max(max);
/** When a change was made: an ISO 8601 time, set by the runner that stored it. */
const At = z.string().max(40);

/** A fact of the truth ledger: a statement held true (active) or no longer (resolved), with its evidence. */
export const TruthFact = z.object({
  id: LedgerItemId,
  statement: LedgerText(1_000),
  status: z.enum(["active", "resolved"]),
  /** What supports it (sources, quotes, tool results), oldest first. */
  evidence: z.array(LedgerText(1_000)).max(32),
  /** How sure the writer is, 0..1, when it said. */
  confidence: z.number().min(0).max(1).optional(),
  /** Who last changed it. */
  by: LedgerActor,
  created_at: At,
  updated_at: At,
  /** Why it was resolved (it no longer holds, it was answered, …). */
  resolution: LedgerText(1_000).optional(),
});
export type TruthFact = z.infer<typeof TruthFact>;

/** The truth ledger: every fact, in the order they were first recorded. */
export const TruthState = z.object({ facts: z.array(TruthFact) });
export type TruthState = z.infer<typeof TruthState>;

/** What the task is: its goal, the constraints on it, and when it counts as done. */
export const TaskSpec = z.object({
  goal: LedgerText(2_000),
  constraints: z.array(LedgerText(1_000)).max(32).default([]),
  acceptance: z.array(LedgerText(1_000)).max(32).default([]),
});
export type TaskSpec = z.infer<typeof TaskSpec>;

export const TaskItemStatus = z.enum(["todo", "doing", "done", "dropped"]);
export type TaskItemStatus = z.infer<typeof TaskItemStatus>;

/** One item of the task's plan. */
export const TaskItem = z.object({
  id: LedgerItemId,
  title: LedgerText(500),
  status: TaskItemStatus,
  /** Notes added by updates, oldest first (the last 20). */
  notes: z.array(LedgerText(1_000)).max(20),
  by: LedgerActor,
  created_at: At,
  updated_at: At,
});
export type TaskItem = z.infer<typeof TaskItem>;

/** Something in the way, of the whole task or of one item. */
export const TaskBlocker = z.object({
  id: LedgerItemId,
  message: LedgerText(1_000),
  item_id: LedgerItemId.optional(),
  status: z.enum(["open", "resolved"]),
  resolution: LedgerText(1_000).optional(),
  by: LedgerActor,
  created_at: At,
  updated_at: At,
});
export type TaskBlocker = z.infer<typeof TaskBlocker>;

/** The task ledger: the spec (null until set), items and blockers in the order they were recorded. */
export const TaskState = z.object({
  spec: TaskSpec.nullable(),
  items: z.array(TaskItem),
  blockers: z.array(TaskBlocker),
});
export type TaskState = z.infer<typeof TaskState>;

/**
 * An explicit compaction request (docs/context.md, "Compaction requests"): the session's next turn
 * compacts its older turns whatever the pressure, its CONTEXT_COMPACTED naming the reason `requested`.
 */
export const CompactionRequest = z.object({
  /** Why it is asked (recorded, shown by `pendingCompaction`). */
  reason: LedgerText(500),
  /** What the summariser is asked to keep; absent: CONCLAVE_COMPACTION_INSTRUCTIONS, when the runner sets it. */
  instructions: LedgerText(4_000).optional(),
});
export type CompactionRequest = z.infer<typeof CompactionRequest>;

/** The session's latest compaction request, as the ledgers fold it: with the stream sequence of its event. */
export const RecordedCompactionRequest = CompactionRequest.extend({
  /** The stream sequence of its COMPACTION_REQUESTED: a CONTEXT_COMPACTED naming it (`request_seq`) consumed it. */
  seq: z.number().int().min(1),
  by: LedgerActor,
  at: At,
});
export type RecordedCompactionRequest = z.infer<typeof RecordedCompactionRequest>;

/** Both ledgers of a session, as folded from its log through the event at stream sequence `through_seq` (0: none). */
export const Ledgers = z.object({
  session_id: SessionId,
  truth: TruthState,
  task: TaskState,
  /** The session domain's worker results (absent from ledgers stored before 0.3.0: none). */
  workers: WorkerResultsState.default(emptyWorkerResults),
  /** The latest compaction request (consumed or not: the session's arena says which); absent: none. */
  compaction: RecordedCompactionRequest.optional(),
  /** Skills activated for the session (`skills.activate`), oldest first (absent from older ledgers: none). */
  skills: z.array(SessionSkillActivation).max(MAX_SESSION_SKILLS).default([]),
  /** Supplements committed for the next turns (src/contracts/supplement.ts); absent: none. */
  supplements: SupplementsState.optional(),
  through_seq: z.number().int().min(0),
  /** How many ledger events the fold applied. */
  events: z.number().int().min(0),
});
export type Ledgers = z.infer<typeof Ledgers>;

/** Each kind of ledger event and its payload: the entity as it is after the change. */
export const LedgerEventPayloads = {
  TRUTH_FACT_UPSERTED: z.object({ fact: TruthFact }),
  TRUTH_FACT_RESOLVED: z.object({ fact: TruthFact }),
  TASK_SPEC_SET: z.object({ spec: TaskSpec }),
  TASK_ITEM_ADDED: z.object({ item: TaskItem }),
  TASK_ITEM_UPDATED: z.object({ item: TaskItem }),
  TASK_BLOCKER_RECORDED: z.object({ blocker: TaskBlocker }),
  TASK_BLOCKER_RESOLVED: z.object({ blocker: TaskBlocker }),
  ...WorkerResultEventPayloads,
  /** A compaction of the session's context asked for (`client.requestCompaction`, `conclave session compact`). */
  COMPACTION_REQUESTED: CompactionRequest,
  ...SessionSkillEventPayloads,
  ...SupplementEventPayloads,
} as const;
export type LedgerEventKind = keyof typeof LedgerEventPayloads;

const EventEnvelope = { session_id: SessionId, by: LedgerActor, at: At };

/** One change to a ledger, as stored on the session's log: the change, the session, who made it and when. */
export const LedgerEvent = z.discriminatedUnion("kind", [
  z.object({
    ...EventEnvelope,
    kind: z.literal("TRUTH_FACT_UPSERTED"),
    payload: LedgerEventPayloads.TRUTH_FACT_UPSERTED,
  }),
  z.object({
    ...EventEnvelope,
    kind: z.literal("TRUTH_FACT_RESOLVED"),
    payload: LedgerEventPayloads.TRUTH_FACT_RESOLVED,
  }),
  z.object({ ...EventEnvelope, kind: z.literal("TASK_SPEC_SET"), payload: LedgerEventPayloads.TASK_SPEC_SET }),
  z.object({ ...EventEnvelope, kind: z.literal("TASK_ITEM_ADDED"), payload: LedgerEventPayloads.TASK_ITEM_ADDED }),
  z.object({ ...EventEnvelope, kind: z.literal("TASK_ITEM_UPDATED"), payload: LedgerEventPayloads.TASK_ITEM_UPDATED }),
  z.object({
    ...EventEnvelope,
    kind: z.literal("TASK_BLOCKER_RECORDED"),
    payload: LedgerEventPayloads.TASK_BLOCKER_RECORDED,
  }),
  z.object({
    ...EventEnvelope,
    kind: z.literal("TASK_BLOCKER_RESOLVED"),
    payload: LedgerEventPayloads.TASK_BLOCKER_RESOLVED,
  }),
  z.object({
    ...EventEnvelope,
    kind: z.literal("WORKER_RESULT_RECORDED"),
    payload: LedgerEventPayloads.WORKER_RESULT_RECORDED,
  }),
  z.object({
    ...EventEnvelope,
    kind: z.literal("WORKER_RESULTS_MERGED"),
    payload: LedgerEventPayloads.WORKER_RESULTS_MERGED,
  }),
  z.object({
    ...EventEnvelope,
    kind: z.literal("WORKER_RESULTS_CLEARED"),
    payload: LedgerEventPayloads.WORKER_RESULTS_CLEARED,
  }),
  z.object({
    ...EventEnvelope,
    kind: z.literal("COMPACTION_REQUESTED"),
    payload: LedgerEventPayloads.COMPACTION_REQUESTED,
  }),
  z.object({
    ...EventEnvelope,
    kind: z.literal("SESSION_SKILL_ACTIVATED"),
    payload: LedgerEventPayloads.SESSION_SKILL_ACTIVATED,
  }),
  z.object({
    ...EventEnvelope,
    kind: z.literal("SESSION_SKILL_DEACTIVATED"),
    payload: LedgerEventPayloads.SESSION_SKILL_DEACTIVATED,
  }),
  z.object({
    ...EventEnvelope,
    kind: z.literal("SUPPLEMENT_COMMITTED"),
    payload: LedgerEventPayloads.SUPPLEMENT_COMMITTED,
  }),
]);
export type LedgerEvent = z.infer<typeof LedgerEvent>;

/** A short view of both ledgers: what agents get in their context, and `truth.getLedgerDigest`. */
export const LedgerDigest = z.object({
  /** Active facts' statements, most recently changed first (at most 10). */
  facts: z.array(z.string()),
  task: z.object({
    goal: z.string().optional(),
    /** Items not done or dropped, as `[status] title` (at most 10). */
    open_items: z.array(z.string()),
    /** Open blockers' messages (at most 10). */
    open_blockers: z.array(z.string()),
  }),
  /**
   * The session domain's pending worker results, as `worker (status): summary` (the last 10), and the
   * last merge's values, as `key = JSON` (the first 20, each cut at 200 characters); absent when there
   * are none.
   */
  workers: z.object({ pending: z.array(z.string()), merged: z.array(z.string()) }).optional(),
  counts: z.object({
    facts_active: z.number().int(),
    facts_resolved: z.number().int(),
    items_open: z.number().int(),
    items_done: z.number().int(),
    blockers_open: z.number().int(),
  }),
  /** The same as a few lines of text, for a prompt. Empty when both ledgers are. */
  text: z.string(),
});
export type LedgerDigest = z.infer<typeof LedgerDigest>;

/** The result of `ledgers.replay`: both ledgers folded again from the log, against the stored projection. */
export const LedgerReplay = z.object({
  rebuilt: Ledgers,
  stored: Ledgers.nullable(),
  matches: z.boolean(),
  /** What differs, one line each. */
  differences: z.array(z.string()),
  /**
   * Ledger events the stored projection folded that are no longer on the log (past the event log's
   * maximum age, or erased): the fold cannot be compared, so it is not, and this says why.
   */
  expired_events: z.number().int().min(1).optional(),
  /** The stream sequence the fold started after: a replay checkpoint's ledgers, or 0 (the start). */
  from_seq: z.number().int().min(0).optional(),
  /** The ledger events the fold read from the log (those after `from_seq`). */
  events_read: z.number().int().min(0).optional(),
});
export type LedgerReplay = z.infer<typeof LedgerReplay>;
