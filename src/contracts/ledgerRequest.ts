import { z } from "zod";
import { AgentId, SessionId } from "./ids.ts";
import {
  CompactionRequest,
  LedgerDigest,
  LedgerItemId,
  LedgerReplay,
  Ledgers,
  LedgerText,
  LedgerUserId,
  TaskBlocker,
  TaskItem,
  TaskItemStatus,
  TaskSpec,
  TaskState,
  TruthFact,
  TruthState,
} from "./ledger.ts";
import { SkillId } from "./skill.ts";
import { SessionSkillChange } from "./skillActivations.ts";
import { SupplementCommitInput, SupplementCommitResult, SupplementPlan, SupplementPlanInput } from "./supplement.ts";
import { WorkerMerge, WorkerResultInput, WorkerResultsState } from "./workerResults.ts";

/**
 * The ledger requests (`conclave.ledger.<session>`, and an agent's on
 * `conclave.agentledger.<session>`): each operation, what it is given and what
 * it answers. The ledgers themselves and their events are in ledger.ts.
 */

/** What `truth.upsertFact` is given. */
export const TruthFactInput = z.object({
  /** Default: derived from the statement, so the same statement upserts the same fact. */
  id: LedgerItemId.optional(),
  statement: LedgerText(1_000),
  evidence: z.array(LedgerText(1_000)).max(32).optional(),
  confidence: z.number().min(0).max(1).optional(),
});
/** What `task.addItem` is given. */
export const TaskItemInput = z.object({
  /** Default: derived from the title. */
  id: LedgerItemId.optional(),
  title: LedgerText(500),
  status: TaskItemStatus.optional(),
});
/** What `task.updateItem` is given: the item's id and what changes (a note is appended). */
export const TaskItemUpdate = z.object({
  id: LedgerItemId,
  title: LedgerText(500).optional(),
  status: TaskItemStatus.optional(),
  note: LedgerText(1_000).optional(),
});
/** What `task.recordBlocker` is given. */
export const TaskBlockerInput = z.object({
  /** Default: derived from the message. */
  id: LedgerItemId.optional(),
  message: LedgerText(1_000),
  item_id: LedgerItemId.optional(),
});

const RequestEnvelope = {
  session_id: SessionId,
  /**
   * The end user a client of the runtime's account makes the change for
   * (role `client`: an application server acting for its users): recorded on
   * it as `by: "user:<user_id>"`; without it, `by: "user"`. A tenant may not
   * name one (`forbidden`): its changes are recorded as `tenant:<its name>`.
   * An agent's request may not either: its changes are the agent's.
   */
  user_id: LedgerUserId.optional(),
  /**
   * Refused: a request carrying `by` is answered `invalid_request` and
   * nothing is stored. Provenance is not the requester's to claim: the
   * runner records who wrote from the subject the request came on, that is
   * from the writer's authenticated role (see {@link LedgerActor}). Refused
   * rather than ignored because `by` was once part of this request: a
   * client still sending it learns at once that it is no longer honoured.
   */
  by: z
    .never({ error: "not the requester's to set: the runner records who wrote (name the end user with user_id)" })
    .optional(),
};

/**
 * Requested on `conclave.ledger.<session>` (a tenant: through its account's
 * import): one ledger operation, by `op`. The change is recorded as made by
 * `user`, `user:<user_id>` or `tenant:<name>`, never as the body says (a
 * body with `by` is refused, see `by` above).
 */
export const LedgerRequest = z.discriminatedUnion("op", [
  z.object({ ...RequestEnvelope, op: z.literal("truth.upsert_fact"), fact: TruthFactInput }),
  z.object({
    ...RequestEnvelope,
    op: z.literal("truth.resolve_fact"),
    fact_id: LedgerItemId,
    resolution: LedgerText(1_000).optional(),
  }),
  z.object({
    ...RequestEnvelope,
    op: z.literal("truth.query"),
    /** Facts about this text first (topic overlap); without it, the most recently changed first. */
    text: z.string().max(2_000).optional(),
    status: z.enum(["active", "resolved", "all"]).default("active"),
    limit: z.number().int().min(1).max(200).default(20),
  }),
  z.object({ ...RequestEnvelope, op: z.literal("truth.digest") }),
  z.object({ ...RequestEnvelope, op: z.literal("truth.state") }),
  z.object({ ...RequestEnvelope, op: z.literal("task.set_spec"), spec: TaskSpec }),
  z.object({ ...RequestEnvelope, op: z.literal("task.add_item"), item: TaskItemInput }),
  z.object({ ...RequestEnvelope, op: z.literal("task.update_item"), item: TaskItemUpdate }),
  z.object({ ...RequestEnvelope, op: z.literal("task.record_blocker"), blocker: TaskBlockerInput }),
  z.object({
    ...RequestEnvelope,
    op: z.literal("task.resolve_blocker"),
    blocker_id: LedgerItemId,
    resolution: LedgerText(1_000).optional(),
  }),
  z.object({ ...RequestEnvelope, op: z.literal("task.state") }),
  z.object({ ...RequestEnvelope, op: z.literal("workers.record"), result: WorkerResultInput }),
  z.object({ ...RequestEnvelope, op: z.literal("workers.list") }),
  z.object({ ...RequestEnvelope, op: z.literal("workers.merge") }),
  /** `all`: the last merge too (seed 003's `clearState`); without it, only the pending results. */
  z.object({ ...RequestEnvelope, op: z.literal("workers.clear"), all: z.boolean().default(false) }),
  z.object({ ...RequestEnvelope, op: z.literal("ledgers.state") }),
  z.object({ ...RequestEnvelope, op: z.literal("ledgers.replay") }),
  /** Asks the session's next turn to compact its context (recorded as COMPACTION_REQUESTED). */
  z.object({ ...RequestEnvelope, op: z.literal("context.request_compaction"), compaction: CompactionRequest }),
  /** Activates a skill for the session's later turns (SESSION_SKILL_ACTIVATED), or ends that (skillActivations.ts). */
  z.object({ ...RequestEnvelope, op: z.literal("skills.activate"), skill: SkillId }),
  z.object({ ...RequestEnvelope, op: z.literal("skills.deactivate"), skill: SkillId }),
  /** How much of a text the next turn's `supplemental` zone would take (writes nothing). */
  z.object({ ...RequestEnvelope, op: z.literal("context.plan_supplement"), supplement: SupplementPlanInput }),
  /** Records a supplement for the next turn (SUPPLEMENT_COMMITTED), as the runner plans it. */
  z.object({ ...RequestEnvelope, op: z.literal("context.commit_supplement"), supplement: SupplementCommitInput }),
]);
export type LedgerRequest = z.infer<typeof LedgerRequest>;
export type LedgerOpName = LedgerRequest["op"];

/**
 * Requested on `conclave.agentledger.<session>` by a worker, for an agent's
 * `ctx.ledgers`: the operation (`user_id` refused), recorded as made by
 * `agent:<agent_id>`. Internal: only the worker role may publish there
 * (nats.conf), so it is the one path by which a change is recorded as an
 * agent's; the public subject cannot claim it.
 */
export const AgentLedgerRequest = z.object({
  /** The agent that asks (the worker hosting it says so). */
  agent_id: AgentId,
  request: LedgerRequest,
});
export type AgentLedgerRequest = z.infer<typeof AgentLedgerRequest>;

/** What each operation answers. */
export const LedgerResults = {
  "truth.upsert_fact": TruthFact,
  "truth.resolve_fact": TruthFact,
  "truth.query": z.array(TruthFact),
  "truth.digest": LedgerDigest,
  "truth.state": TruthState,
  "task.set_spec": TaskState,
  "task.add_item": TaskItem,
  "task.update_item": TaskItem,
  "task.record_blocker": TaskBlocker,
  "task.resolve_blocker": TaskBlocker,
  "task.state": TaskState,
  "workers.record": WorkerResultsState.shape.pending.element.nullable(),
  "workers.list": WorkerResultsState,
  "workers.merge": WorkerMerge.nullable(),
  "workers.clear": WorkerResultsState,
  "ledgers.state": Ledgers,
  "ledgers.replay": LedgerReplay,
  "context.request_compaction": CompactionRequest,
  "skills.activate": SessionSkillChange,
  "skills.deactivate": SessionSkillChange,
  "context.plan_supplement": SupplementPlan,
  "context.commit_supplement": SupplementCommitResult,
} as const satisfies Record<LedgerOpName, z.ZodType>;

/** The reply to a ledger request: the operation's result (see {@link LedgerResults}). */
export const LedgerReply = z.object({ result: z.unknown() });
export type LedgerReply = z.infer<typeof LedgerReply>;
