import { createHash } from "node:crypto";
import type {
  CompactionRequest,
  LedgerEvent,
  Ledgers,
  TaskBlocker,
  TaskItem,
  TaskState,
  TruthFact,
} from "../contracts/ledger.ts";
import type { LedgerRequest } from "../contracts/ledgerRequest.ts";
import type { SessionSkillChange } from "../contracts/skillActivations.ts";
import type { SupplementCommitResult, SupplementCommitted } from "../contracts/supplement.ts";
import type { WorkerMerge, WorkerResult, WorkerResultsState } from "../contracts/workerResults.ts";
import { ConclaveError } from "../errors.ts";
import { decideSessionSkill, type SkillCompletedWrite } from "./sessionSkills.ts";
import { mergeResults, resultToRecord } from "./workerResults.ts";

/**
 * What a ledger write means, decided against the ledgers as they are: the
 * event to store (null when the write changes nothing, so repeating a write —
 * a retried request, an agent run again after a crash — stores nothing new)
 * and what the caller gets back. Pure: the store appends the event only if no
 * other event landed since `state` was folded, so the log never holds a change
 * decided against ledgers that were not current.
 */

/** A ledger write the ledgers refuse: `not_found` (no such fact, item or blocker), `conflict` (an id taken). */
export class LedgerError extends ConclaveError<"not_found" | "conflict"> {}

/** The ledger requests that change something, and the runner's own write ending a completed skill's activation. */
export type LedgerWrite =
  | Extract<
      LedgerRequest,
      {
        op:
          | "truth.upsert_fact"
          | "truth.resolve_fact"
          | "task.set_spec"
          | "task.add_item"
          | "task.update_item"
          | "task.record_blocker"
          | "task.resolve_blocker"
          | "workers.record"
          | "workers.merge"
          | "workers.clear"
          | "context.request_compaction"
          | "skills.activate"
          | "skills.deactivate";
      }
    >
  | SkillCompletedWrite;

/**
 * A supplement's commit, as the runner planned it (`planned`: the text as the zone takes it, and its
 * tokens). The runner adds the plan (src/runtime/intake/ledgerRequests.ts): a request cannot carry one.
 */
export type SupplementWrite = Extract<LedgerRequest, { op: "context.commit_supplement" }> & {
  planned: SupplementCommitted;
};

const WRITES = new Set<string>([
  "truth.upsert_fact",
  "truth.resolve_fact",
  "task.set_spec",
  "task.add_item",
  "task.update_item",
  "task.record_blocker",
  "task.resolve_blocker",
  "workers.record",
  "workers.merge",
  "workers.clear",
  "context.request_compaction",
  "skills.activate",
  "skills.deactivate",
]);

export const isLedgerWrite = (request: LedgerRequest): request is Extract<LedgerWrite, LedgerRequest> =>
  WRITES.has(request.op);

/** A decision: the event to store (or none), and the result for the caller once it is stored. */
export interface LedgerDecision {
  event: LedgerEvent | null;
  result:
    | TruthFact
    | TaskItem
    | TaskBlocker
    | TaskState
    | WorkerResult
    | WorkerMerge
    | WorkerResultsState
    | CompactionRequest
    | SessionSkillChange
    | SupplementCommitResult
    | null;
}

/** The same text the same way: lowercase, single spaces, no trailing punctuation. */
const normalise = (text: string) =>
  text
    .toLowerCase()
    .replace(/\s+/g, " ")
    .replace(/[\s.!?;:,]+$/, "")
    .trim();

/** An id derived from a text: the same text (up to case, spacing, final punctuation) gives the same id. */
export const derivedId = (prefix: string, text: string): string =>
  `${prefix}-${createHash("sha256").update(normalise(text)).digest("hex").slice(0, 12)}`;

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/** Decides a write against `state`; `by` and `at` are who asks and the runner's clock. */
export function decideLedger(
  state: Ledgers,
  request: LedgerWrite | SupplementWrite,
  by: string,
  at: string,
): LedgerDecision {
  const envelope = { session_id: state.session_id, by, at };
  switch (request.op) {
    case "truth.upsert_fact": {
      const input = request.fact;
      const id = input.id ?? derivedId("fact", input.statement);
      const existing = state.truth.facts.find((fact) => fact.id === id);
      const evidence = [...(existing?.evidence ?? [])];
      for (const item of input.evidence ?? []) if (!evidence.includes(item)) evidence.push(item);
      const { resolution: _resolution, ...kept } = existing ?? ({} as Partial<TruthFact>);
      const fact: TruthFact = {
        ...kept,
        id,
        statement: input.statement,
        status: "active",
        evidence: evidence.slice(-32),
        ...(input.confidence !== undefined
          ? { confidence: input.confidence }
          : existing?.confidence !== undefined
            ? { confidence: existing.confidence }
            : {}),
        by,
        created_at: existing?.created_at ?? at,
        updated_at: at,
      };
      if (existing && same(withoutChangeMarks(existing), withoutChangeMarks(fact)))
        return { event: null, result: existing };
      return { event: { ...envelope, kind: "TRUTH_FACT_UPSERTED", payload: { fact } }, result: fact };
    }
    case "truth.resolve_fact": {
      const existing = state.truth.facts.find((fact) => fact.id === request.fact_id);
      if (!existing) throw new LedgerError("not_found", `the truth ledger has no fact ${request.fact_id}`);
      if (existing.status === "resolved") return { event: null, result: existing };
      const fact: TruthFact = {
        ...existing,
        status: "resolved",
        ...(request.resolution !== undefined ? { resolution: request.resolution } : {}),
        by,
        updated_at: at,
      };
      return { event: { ...envelope, kind: "TRUTH_FACT_RESOLVED", payload: { fact } }, result: fact };
    }
    case "task.set_spec": {
      const task = { ...state.task, spec: request.spec };
      if (same(state.task.spec, request.spec)) return { event: null, result: state.task };
      return { event: { ...envelope, kind: "TASK_SPEC_SET", payload: { spec: request.spec } }, result: task };
    }
    case "task.add_item": {
      const input = request.item;
      const id = input.id ?? derivedId("item", input.title);
      const existing = state.task.items.find((item) => item.id === id);
      if (existing) {
        if (normalise(existing.title) === normalise(input.title)) return { event: null, result: existing };
        throw new LedgerError("conflict", `task item ${id} exists with another title: update it instead`);
      }
      const item: TaskItem = {
        id,
        title: input.title,
        status: input.status ?? "todo",
        notes: [],
        by,
        created_at: at,
        updated_at: at,
      };
      return { event: { ...envelope, kind: "TASK_ITEM_ADDED", payload: { item } }, result: item };
    }
    case "task.update_item": {
      const input = request.item;
      const existing = state.task.items.find((item) => item.id === input.id);
      if (!existing) throw new LedgerError("not_found", `the task ledger has no item ${input.id}`);
      const notes =
        input.note !== undefined && existing.notes.at(-1) !== input.note
          ? [...existing.notes, input.note].slice(-20)
          : existing.notes;
      const item: TaskItem = {
        ...existing,
        title: input.title ?? existing.title,
        status: input.status ?? existing.status,
        notes,
        by,
        updated_at: at,
      };
      if (same(withoutChangeMarks(existing), withoutChangeMarks(item))) return { event: null, result: existing };
      return { event: { ...envelope, kind: "TASK_ITEM_UPDATED", payload: { item } }, result: item };
    }
    case "task.record_blocker": {
      const input = request.blocker;
      if (input.item_id !== undefined && !state.task.items.some((item) => item.id === input.item_id))
        throw new LedgerError("not_found", `the task ledger has no item ${input.item_id} to block`);
      const id = input.id ?? derivedId("blocker", input.message);
      const existing = state.task.blockers.find((blocker) => blocker.id === id);
      if (existing?.status === "open" && existing.message === input.message && existing.item_id === input.item_id)
        return { event: null, result: existing };
      const blocker: TaskBlocker = {
        id,
        message: input.message,
        ...(input.item_id !== undefined ? { item_id: input.item_id } : {}),
        status: "open",
        by,
        created_at: existing?.created_at ?? at,
        updated_at: at,
      };
      return { event: { ...envelope, kind: "TASK_BLOCKER_RECORDED", payload: { blocker } }, result: blocker };
    }
    case "task.resolve_blocker": {
      const existing = state.task.blockers.find((blocker) => blocker.id === request.blocker_id);
      if (!existing) throw new LedgerError("not_found", `the task ledger has no blocker ${request.blocker_id}`);
      if (existing.status === "resolved") return { event: null, result: existing };
      const blocker: TaskBlocker = {
        ...existing,
        status: "resolved",
        ...(request.resolution !== undefined ? { resolution: request.resolution } : {}),
        by,
        updated_at: at,
      };
      return { event: { ...envelope, kind: "TASK_BLOCKER_RESOLVED", payload: { blocker } }, result: blocker };
    }
    case "workers.record": {
      const decided = resultToRecord(state, request.result, by, at);
      if ("refused" in decided) throw new LedgerError("conflict", decided.refused);
      if (!decided.result) return { event: null, result: decided.existing ?? null };
      const result = decided.result;
      return { event: { ...envelope, kind: "WORKER_RESULT_RECORDED", payload: { result } }, result };
    }
    case "workers.merge": {
      const merge = mergeResults(state.workers.pending, by, at);
      if (!merge) return { event: null, result: state.workers.last_merge };
      return { event: { ...envelope, kind: "WORKER_RESULTS_MERGED", payload: { merge } }, result: merge };
    }
    case "workers.clear": {
      const cleared = state.workers.pending.map((result) => result.id);
      const mergeCleared = request.all && state.workers.last_merge !== null;
      const after: WorkerResultsState = { pending: [], last_merge: request.all ? null : state.workers.last_merge };
      if (cleared.length === 0 && !mergeCleared) return { event: null, result: after };
      return {
        event: { ...envelope, kind: "WORKER_RESULTS_CLEARED", payload: { cleared, merge_cleared: mergeCleared } },
        result: after,
      };
    }
    case "context.request_compaction":
      // Always stored: each request is one (a second before the next turn is consumed with the first).
      return {
        event: { ...envelope, kind: "COMPACTION_REQUESTED", payload: request.compaction },
        result: request.compaction,
      };
    case "skills.activate":
    case "skills.deactivate":
    case "skills.completed": {
      const decided = decideSessionSkill(state, request, envelope);
      if ("refused" in decided) throw new LedgerError("conflict", decided.refused);
      return decided;
    }
    case "context.commit_supplement": {
      // Idempotent per scope: a scope committed before records nothing again, and answers what it recorded.
      const { planned } = request;
      if (planned.scope !== undefined && state.supplements?.scopes.includes(planned.scope)) {
        const earlier = state.supplements.recorded.findLast((supplement) => supplement.scope === planned.scope);
        const { seq: _seq, by: _by, at: _at, ...committed } = earlier ?? { ...planned, seq: 0, by, at };
        return { event: null, result: { ...committed, duplicate: true } };
      }
      return {
        event: { ...envelope, kind: "SUPPLEMENT_COMMITTED", payload: planned },
        result: { ...planned, duplicate: false },
      };
    }
  }
}

/** An entity without who changed it last and when: what a repeated write would not change. */
function withoutChangeMarks<T extends { by: string; updated_at: string }>(entity: T): Omit<T, "by" | "updated_at"> {
  const { by: _by, updated_at: _updated, ...rest } = entity;
  return rest;
}
