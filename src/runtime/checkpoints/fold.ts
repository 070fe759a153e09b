/**
 * Folding every domain of a session from its log: pure, so a fold from a
 * checkpoint plus the events after it gives the same state as a fold from
 * the first event. Each domain folds only its own input (turns, ledger
 * events, schedule events), so how those interleave does not matter, only
 * where the cut is (state.ts, TapeCut).
 */
import type { EngineEvent } from "../../contracts/events.ts";
import type { LedgerEvent } from "../../contracts/ledger.ts";
import { retrievedCounts } from "../../contracts/memory.ts";
import { emptyPriceTable } from "../../cost/prices.ts";
import { type CostRow, type CostSummary, summarizeCost } from "../../cost/summary.ts";
import { applyLedgerEvent } from "../../ledgers/fold.ts";
import { foldScheduleEvent } from "../../schedules/fold.ts";
import type { IntentState, ScheduleEvent } from "../../schedules/intent.ts";
import { foldTurn } from "../replay.ts";
import { type TapeMemory, type TapeState, TapeState as TapeStateSchema } from "./state.ts";

/**
 * The kinds of a turn's events the fold reads (foldTurn, the memory and fork steps below, summarizeCost):
 * a checkpoint's read parses only these, the rest of a turn (stream chunks, waves, workspace patches,
 * the council's and critics' steps) being most of its events. A fold that reads another kind adds it here.
 */
export const FOLDED_KINDS: ReadonlySet<string> = new Set([
  "TURN_RESUMED",
  "TURN_COMPLETED",
  "SENSORS_FAST_UPDATED",
  "STANCE_UPDATED",
  "CONTEXT_PLANNED",
  "CONTEXT_COMPACTED",
  "AGENT_COMPLETED",
  "MEMORY_RETRIEVED",
  "MEMORY_COMMITTED",
  "SESSION_FORKED",
  "WORKING_MEMORY_UPDATED",
]);

/** One input of the fold: a whole turn, one ledger event, or one schedule log event (with its stream sequence). */
export type TapeStep =
  | { kind: "turn"; turn_id: number; events: readonly EngineEvent[] }
  | { kind: "ledger"; seq: number; event: LedgerEvent }
  | { kind: "schedule"; seq: number; event: ScheduleEvent | null };

/** What a fork's first event (SESSION_FORKED) carries of the source: the domains not copied as events. */
export const ForkedDomains = TapeStateSchema.pick({ session: true, cost: true, memory: true });

/** Adds `row`'s amounts into the row of the same name (appended when new). */
function addRows<R extends CostRow>(into: R[], rows: readonly R[]): R[] {
  const next = into.map((row) => ({ ...row }));
  for (const row of rows) {
    const same = next.find((existing) => existing.name === row.name);
    if (!same) next.push({ ...row });
    else {
      same.prompt_tokens += row.prompt_tokens;
      same.completion_tokens += row.completion_tokens;
      same.usd += row.usd;
      same.unpriced_tokens += row.unpriced_tokens;
    }
  }
  return next;
}

/** Two cost summaries of the same session added up (rows by name, in first-seen order). */
export function addCost(a: CostSummary, b: CostSummary): CostSummary {
  const [total] = addRows([{ name: "", ...a.total }], [{ name: "", ...b.total }]);
  const { name: _name, ...amount } = total!;
  return {
    session_id: a.session_id,
    turns: a.turns + b.turns,
    total: amount,
    by_turn: addRows(a.by_turn, b.by_turn),
    by_actor: addRows(a.by_actor, b.by_actor),
    by_model: addRows(a.by_model, b.by_model),
    by_skill: addRows(a.by_skill, b.by_skill),
  };
}

/** The memory domain after one turn: its stored commit, and what its retrieval held (completed turns only). */
function foldMemory(memory: TapeMemory, turnId: number, events: readonly EngineEvent[]): TapeMemory {
  if (!events.some((event) => event.kind === "TURN_COMPLETED")) return memory;
  let next = memory;
  for (const event of events) {
    if (event.kind === "MEMORY_COMMITTED" && event.payload.stored && !next.committed_turns.includes(turnId))
      next = { ...next, committed_turns: [...next.committed_turns, turnId] };
    // Counts only, of either shape: a checkpoint (and a fork's SESSION_FORKED) keeps no retrieved text.
    if (event.kind === "MEMORY_RETRIEVED")
      next = { ...next, last_retrieved: { turn_id: turnId, ...retrievedCounts(event.payload) } };
  }
  return next;
}

/** The state after a turn: a fork's first turn takes the source's state; any other folds into each domain. */
function foldTurnStep(state: TapeState, turnId: number, events: readonly EngineEvent[]): TapeState {
  const cut = { ...state.cut, through_turn_id: Math.max(state.cut.through_turn_id, turnId) };
  const forked = events.find((event) => event.kind === "SESSION_FORKED");
  if (forked?.kind === "SESSION_FORKED") {
    const parsed = ForkedDomains.safeParse(forked.payload.state);
    // A damaged SESSION_FORKED is folded as nothing, by every fold alike.
    if (!parsed.success) return { ...state, cut };
    // A compaction summary's text is in this SESSION_FORKED now (the fork's log), not at the source's turn.
    const summary = parsed.data.session.context_arena?.summary;
    const session =
      summary && parsed.data.session.context_arena
        ? {
            ...parsed.data.session,
            context_arena: { ...parsed.data.session.context_arena, summary: { ...summary, compacted_in: turnId } },
          }
        : parsed.data.session;
    return {
      ...state,
      cut,
      ...parsed.data,
      session,
      cost: { ...parsed.data.cost, session_id: state.session_id },
      forked_at_turn: turnId,
    };
  }
  // Working memory by reference: an update stands once recorded, whether or not its turn completed.
  const updated = events.findLast((event) => event.kind === "WORKING_MEMORY_UPDATED");
  return {
    ...state,
    cut,
    ...(updated?.kind === "WORKING_MEMORY_UPDATED"
      ? { working_memory: { version: updated.payload.version, turn_id: turnId, agent_id: updated.payload.agent_id } }
      : {}),
    session: foldTurn(state.session, events),
    cost: addCost(state.cost, summarizeCost(state.session_id, events, emptyPriceTable())),
    memory: foldMemory(state.memory, turnId, events),
  };
}

/** The session's schedules after one schedule log event (other sessions' intents pass by). */
function foldSchedule(state: TapeState, seq: number, event: ScheduleEvent | null): TapeState {
  const cut = { ...state.cut, schedules_seq: Math.max(state.cut.schedules_seq, seq) };
  if (!event) return { ...state, cut };
  const id = event.kind === "created" ? event.intent.id : event.id;
  const ours = event.kind === "created" ? event.intent.session_id === state.session_id : id in state.schedules;
  if (!ours) return { ...state, cut };
  const intents = new Map<string, IntentState>(
    Object.entries(state.schedules).map(([key, value]) => [key, structuredClone(value)]),
  );
  foldScheduleEvent(intents, event);
  return { ...state, cut, schedules: Object.fromEntries(intents) };
}

/** The state after one step. */
export function foldDomains(state: TapeState, step: TapeStep): TapeState {
  switch (step.kind) {
    case "turn":
      return foldTurnStep(state, step.turn_id, step.events);
    case "ledger":
      return {
        ...state,
        cut: { ...state.cut, events_seq: Math.max(state.cut.events_seq, step.seq) },
        ledgers: applyLedgerEvent(state.ledgers, step.event, step.seq),
      };
    case "schedule":
      return foldSchedule(state, step.seq, step.event);
  }
}

/** Folds the steps (turns in turn order, ledger and schedule events in log order) onto `from`. */
export function foldTape(from: TapeState, steps: Iterable<TapeStep>): TapeState {
  let state = from;
  for (const step of steps) state = foldDomains(state, step);
  return state;
}
