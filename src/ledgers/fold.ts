import type { LedgerEvent, Ledgers } from "../contracts/ledger.ts";
import { SUPPLEMENT_SCOPES_KEPT, SUPPLEMENTS_KEPT } from "../contracts/supplement.ts";
import { emptyWorkerResults } from "../contracts/workerResults.ts";
import { applySessionSkillEvent } from "./sessionSkills.ts";

/**
 * Folding the ledgers from the session's log: pure, so the same events give
 * the same ledgers wherever and whenever they are folded (a replay, a runner
 * after a restart, the projection). Each event carries the entity as it is
 * after the change, so applying one is a replace (or an append for a new id).
 */

/** Both ledgers of a session before its first ledger event. */
export const emptyLedgers = (sessionId: string): Ledgers => ({
  session_id: sessionId,
  truth: { facts: [] },
  task: { spec: null, items: [], blockers: [] },
  workers: emptyWorkerResults(),
  skills: [],
  through_seq: 0,
  events: 0,
});

/** The list with `entity` in place of the one with its id, or appended when none has it. */
function put<T extends { id: string }>(list: readonly T[], entity: T): T[] {
  const index = list.findIndex((existing) => existing.id === entity.id);
  if (index === -1) return [...list, entity];
  const next = [...list];
  next[index] = entity;
  return next;
}

/** The ledgers after one event, stored at stream sequence `streamSeq`. */
export function applyLedgerEvent(state: Ledgers, event: LedgerEvent, streamSeq: number): Ledgers {
  const next = { ...state, through_seq: Math.max(state.through_seq, streamSeq), events: state.events + 1 };
  switch (event.kind) {
    case "TRUTH_FACT_UPSERTED":
    case "TRUTH_FACT_RESOLVED":
      return { ...next, truth: { facts: put(state.truth.facts, event.payload.fact) } };
    case "TASK_SPEC_SET":
      return { ...next, task: { ...state.task, spec: event.payload.spec } };
    case "TASK_ITEM_ADDED":
    case "TASK_ITEM_UPDATED":
      return { ...next, task: { ...state.task, items: put(state.task.items, event.payload.item) } };
    case "TASK_BLOCKER_RECORDED":
    case "TASK_BLOCKER_RESOLVED":
      return { ...next, task: { ...state.task, blockers: put(state.task.blockers, event.payload.blocker) } };
    case "WORKER_RESULT_RECORDED":
      return { ...next, workers: { ...state.workers, pending: put(state.workers.pending, event.payload.result) } };
    case "WORKER_RESULTS_MERGED": {
      const merged = new Set(event.payload.merge.results);
      const pending = state.workers.pending.filter((result) => !merged.has(result.id));
      return { ...next, workers: { pending, last_merge: event.payload.merge } };
    }
    case "WORKER_RESULTS_CLEARED": {
      const cleared = new Set(event.payload.cleared);
      const pending = state.workers.pending.filter((result) => !cleared.has(result.id));
      return {
        ...next,
        workers: { pending, last_merge: event.payload.merge_cleared ? null : state.workers.last_merge },
      };
    }
    case "COMPACTION_REQUESTED":
      return { ...next, compaction: { ...event.payload, seq: streamSeq, by: event.by, at: event.at } };
    case "SESSION_SKILL_ACTIVATED":
    case "SESSION_SKILL_DEACTIVATED":
      return { ...next, skills: applySessionSkillEvent(state.skills, event, streamSeq) };
    case "SUPPLEMENT_COMMITTED": {
      // The newest kept: a turn takes those its arena has not consumed; the scopes make commits idempotent.
      const { recorded = [], scopes = [] } = state.supplements ?? {};
      const { scope } = event.payload;
      return {
        ...next,
        supplements: {
          recorded: [...recorded, { ...event.payload, seq: streamSeq, by: event.by, at: event.at }].slice(
            -SUPPLEMENTS_KEPT,
          ),
          scopes: scope === undefined ? scopes : [...scopes, scope].slice(-SUPPLEMENT_SCOPES_KEPT),
        },
      };
    }
  }
}

/** Folds stored events (in log order) onto `from` (default: empty ledgers). */
export function foldLedgers(
  sessionId: string,
  events: Iterable<{ event: LedgerEvent; seq: number }>,
  from: Ledgers = emptyLedgers(sessionId),
): Ledgers {
  let state = from;
  for (const { event, seq } of events) state = applyLedgerEvent(state, event, seq);
  return state;
}

/** What differs between two folds of the same ledgers, one line each (empty: equal). */
export function ledgerDifferences(rebuilt: Ledgers, stored: Ledgers): string[] {
  const differences: string[] = [];
  if (rebuilt.through_seq !== stored.through_seq)
    differences.push(`through_seq: ${rebuilt.through_seq} ≠ ${stored.through_seq}`);
  if (rebuilt.events !== stored.events) differences.push(`events: ${rebuilt.events} ≠ ${stored.events}`);
  const compare = (name: string, a: readonly { id: string }[], b: readonly { id: string }[]) => {
    const byId = new Map(b.map((entity) => [entity.id, entity]));
    for (const entity of a) {
      const other = byId.get(entity.id);
      if (!other) differences.push(`${name} ${entity.id}: only in the rebuilt ledgers`);
      else if (JSON.stringify(entity) !== JSON.stringify(other)) differences.push(`${name} ${entity.id}: differs`);
      byId.delete(entity.id);
    }
    for (const id of byId.keys()) differences.push(`${name} ${id}: only in the stored ledgers`);
  };
  compare("fact", rebuilt.truth.facts, stored.truth.facts);
  compare("item", rebuilt.task.items, stored.task.items);
  compare("blocker", rebuilt.task.blockers, stored.task.blockers);
  if (JSON.stringify(rebuilt.task.spec) !== JSON.stringify(stored.task.spec)) differences.push("task spec: differs");
  compare("worker result", rebuilt.workers.pending, stored.workers.pending);
  if (JSON.stringify(rebuilt.workers.last_merge) !== JSON.stringify(stored.workers.last_merge))
    differences.push("last worker merge: differs");
  if (rebuilt.compaction?.seq !== stored.compaction?.seq)
    differences.push(`compaction request: ${rebuilt.compaction?.seq ?? "none"} ≠ ${stored.compaction?.seq ?? "none"}`);
  const activations = (ledgers: Ledgers) => ledgers.skills.map((activation) => activation.skill).join(", ") || "none";
  if (JSON.stringify(rebuilt.skills) !== JSON.stringify(stored.skills))
    differences.push(`activated skills: ${activations(rebuilt)} ≠ ${activations(stored)}`);
  const supplements = (ledgers: Ledgers) => (ledgers.supplements?.recorded ?? []).map((item) => item.seq).join(",");
  if (supplements(rebuilt) !== supplements(stored))
    differences.push(`supplements: ${supplements(rebuilt) || "none"} ≠ ${supplements(stored) || "none"}`);
  return differences;
}
