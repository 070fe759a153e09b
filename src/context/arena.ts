/**
 * One turn of a session's context arena: plan the agents' context against
 * the session's budget, compact the older turns first when the pressure has
 * reached the compaction ratio, and say what was done (CONTEXT_PLANNED,
 * CONTEXT_COMPACTED). Pure CPU: no request leaves the process, so the
 * runner's turn runs it in a machine action.
 *
 * Compaction folds in the conversation: the turns after the summary, which
 * the turn reads from memory only when it will compact (compactionRead.ts),
 * not only the few episodes memory retrieved for the message.
 *
 * The agents are then given the planned context: the memory items the plan
 * dropped (episodes, recalled facts, threads, procedures, ledger lines) are
 * left out of their AgentContext, and the summary is added. The turn's own
 * items (the message, sensors, claims) always reach them.
 */
import type { z } from "zod";
import { setting } from "../config/load.ts";
import type { AgentContext } from "../contracts/agent.ts";
import {
  type ArenaPolicy,
  type ContextArenaState,
  type ContextCompactedPayload,
  type ContextPlannedPayload,
  type ContextZonesAdaptedPayload,
  emptyArenaState,
  type ModelSummary,
} from "../contracts/context.ts";
import type { RecordedCompactionRequest } from "../contracts/ledger.ts";
import type { RecordedSupplement } from "../contracts/supplement.ts";
import type { Usage } from "../contracts/usage.ts";
import type { Episode } from "../contracts/workspace.ts";
import { adaptedShares, adaptZones, isNoAdaptation } from "./adaptiveZones.ts";
import { contextBudgetFromEnv, DEFAULT_CONTEXT_BUDGET } from "./budget.ts";
import { compactConversation, DEFAULT_KEEP_RECENT_TURNS, SUMMARY_SHARE } from "./compaction.ts";
import { type ContextPlan, planContext } from "./planner.ts";
import { pendingSupplements, plannedSupplements, supplementCitations, withSupplements } from "./supplemental.ts";
import { tokenizerFor } from "./tokenizer.ts";
import type { ContextSummary } from "./zones.ts";

/** The arena when nothing is configured. */
export const DEFAULT_ARENA_POLICY: ArenaPolicy = { budget: DEFAULT_CONTEXT_BUDGET };

/** What a turn's planning produced. */
export interface ArenaTurn {
  /** The session's arena after it (carried to the next turn). */
  state: ContextArenaState;
  /** What the turn's agents are given. */
  context: AgentContext;
  plan: ContextPlan;
  planned: z.infer<typeof ContextPlannedPayload>;
  /** Set when compaction ran. */
  compacted: z.infer<typeof ContextCompactedPayload> | null;
  /** Set when the session's zone caps moved (adaptive zones). */
  adapted: z.infer<typeof ContextZonesAdaptedPayload> | null;
}

/** The planner over a context, for the session's summary and the model's last count (and its adapted zones). */
function planner(context: AgentContext, policy: ArenaPolicy, state: ContextArenaState) {
  const tokenizer = tokenizerFor(policy.model);
  const zoneShares = policy.adaptive_zones !== false && state.zones ? adaptedShares(state.zones) : undefined;
  const plan = (summary: ContextSummary | null, observed: number) =>
    planContext(
      { context, summary, ...(context.tool_failures ? { tool_failures: context.tool_failures } : {}) },
      {
        budget: policy.budget,
        tokenizer,
        observed_tokens: observed,
        ...(policy.recall_mode ? { recall_mode: policy.recall_mode } : {}),
        ...(zoneShares ? { zone_shares: zoneShares } : {}),
        ...(policy.max_entries !== undefined ? { max_entries: policy.max_entries } : {}),
      },
    );
  return { tokenizer, plan };
}

/** The pressure a turn's context meets before any compaction (what decides whether it compacts). */
export function arenaPressure(
  previous: ContextArenaState | undefined,
  context: AgentContext,
  policy: ArenaPolicy = DEFAULT_ARENA_POLICY,
): ContextPlan["report"]["pressure"] {
  const state = previous ?? emptyArenaState();
  return planner(context, policy, state).plan(summaryOf(state), state.observed_tokens).report.pressure;
}

/**
 * The arena's summary as the planner reads it. One whose text could not be read back from the log
 * (trimmed, or erased) still says which turns it covered, with no text.
 */
export function summaryOf(state: ContextArenaState): ContextSummary | null {
  const summary = state.summary;
  return summary ? { through_turn: summary.through_turn, text: summary.text ?? "" } : null;
}

/** What a turn gives its planning besides its context: the turn, and the conversation read for compaction. */
export interface ArenaTurnInput {
  /** The turn planning: a compaction's summary names it (`compacted_in`, where the log holds its text). */
  turn_id?: number;
  /** The turns after the summary, read from memory when the turn will compact (compactionRead.ts). */
  conversation?: readonly Episode[];
  /** The session's latest compaction request (read with the ledgers): the turn compacts if it is pending. */
  request?: RecordedCompactionRequest | null;
  /** The session's recorded supplements (read with the ledgers): those the arena has not consumed go in. */
  supplements?: readonly RecordedSupplement[];
  /** The summary memory's model wrote while the turn read its conversation (compactionRead.ts); absent: offline. */
  summarised?: ModelSummary | null;
}

/** The newest turns a compaction leaves as they are, under `policy`. */
export const keepRecentTurns = (policy: ArenaPolicy): number =>
  policy.compaction?.keep_recent_turns ?? DEFAULT_KEEP_RECENT_TURNS;

/** The bound of a compaction summary under `policy`, in tokens. */
export const summaryBound = (policy: ArenaPolicy): number =>
  policy.compaction?.max_tokens ?? Math.floor(SUMMARY_SHARE * policy.budget.total_tokens);

/**
 * The request a session's next compaction consumes: the latest one, unless a compaction already
 * consumed it (the arena names the last it consumed); null when none is pending.
 */
export function pendingRequest(
  state: ContextArenaState | undefined,
  request: RecordedCompactionRequest | null | undefined,
): RecordedCompactionRequest | null {
  if (!request) return null;
  return request.seq > (state?.compaction_request_seq ?? 0) ? request : null;
}

/**
 * Plans a turn's context for its agents, compacting first at the compaction ratio. Compaction folds
 * in the turns of `conversation` (the turns after the summary, read from memory when the turn will
 * compact: compactionRead.ts) and the episodes memory retrieved for the turn.
 */
export function planTurnContext(
  previous: ContextArenaState | undefined,
  given: AgentContext,
  policy: ArenaPolicy = DEFAULT_ARENA_POLICY,
  input: ArenaTurnInput = {},
): ArenaTurn {
  let state = previous ?? emptyArenaState();
  // Supplements committed since the last turn: in this plan's `supplemental` zone, consumed by it.
  const supplements = pendingSupplements(state, input.supplements);
  const sourced = withSupplements(given, supplements);
  const { tokenizer, plan } = planner(sourced, policy, state);
  let summary = summaryOf(state);
  let planned = plan(summary, state.observed_tokens);
  let compacted: ArenaTurn["compacted"] = null;
  // A pending request compacts whatever the pressure; it is consumed only by a compaction that ran.
  const request = pendingRequest(state, input.request);
  if (planned.report.pressure.level !== "normal" || request !== null) {
    const compaction = compactConversation(
      byTurn(input.conversation ?? [], given.episodes),
      summary,
      {
        keep_recent_turns: keepRecentTurns(policy),
        max_tokens: summaryBound(policy),
        tokenizer,
        ...(request?.instructions ? { instructions: request.instructions } : {}),
      },
      input.summarised,
    );
    if (compaction !== null) {
      // The model's last count measured the context before compaction: stale now.
      summary = compaction.summary;
      const ref = input.turn_id === undefined ? {} : { compacted_in: input.turn_id };
      const consumed = request ? request.seq : state.compaction_request_seq;
      state = {
        ...state,
        summary: { ...summary, ...ref },
        observed_tokens: 0,
        compactions: state.compactions + 1,
        ...(consumed !== undefined ? { compaction_request_seq: consumed } : {}),
      };
      compacted = {
        summariser: compaction.summariser,
        reason: request ? "requested" : "pressure",
        ...(request
          ? {
              request_seq: request.seq,
              request_reason: request.reason,
              ...(request.instructions ? { instructions: request.instructions } : {}),
            }
          : {}),
        pressure: planned.report.pressure,
        through_turn: compaction.summary.through_turn,
        turns_compacted: compaction.turns_compacted,
        tokens_before: compaction.tokens_before,
        tokens_after: compaction.tokens_after,
        summary: compaction.summary.text,
        ...(compaction.usage ? { usage: compaction.usage } : {}),
      };
      planned = plan(summary, 0);
    }
  }
  // Adaptive zones: what this turn's plan lost to each zone's cap moves the caps of the next turns.
  let adapted: ArenaTurn["adapted"] = null;
  const { zones: _zones, ...rest } = state;
  let next: ContextArenaState = rest;
  let adaptation: ContextArenaState["zones"];
  if (policy.adaptive_zones !== false) {
    const outcome = adaptZones(
      state.zones,
      Object.entries(planned.report.zones).map(([zone, report]) => ({
        zone: zone as keyof typeof planned.report.zones,
        capped: planned.report.dropped.some((item) => item.zone === zone && item.reason === "zone_cap"),
        demand_tokens: report.demand_tokens,
      })),
      policy.budget.total_tokens,
    );
    if (!isNoAdaptation(outcome.adaptation)) {
      adaptation = outcome.adaptation;
      next = { ...next, zones: adaptation };
    }
    if (outcome.changes.length > 0) adapted = { changes: outcome.changes };
  }
  const consumed = supplements.at(-1)?.seq;
  return {
    // The model's last count has served this plan: the replies of this turn report it anew (observeUsage).
    state: { ...next, observed_tokens: 0, ...(consumed !== undefined ? { supplement_seq: consumed } : {}) },
    context: plannedContext(sourced, planned, summary),
    plan: planned,
    planned: {
      encoding: tokenizer.encoding,
      encoding_exact: tokenizer.exact,
      ...planned.report,
      ...(adaptation ? { adaptation } : {}),
      ...(supplements.length > 0 ? { supplemental: supplementCitations(supplements, planned, tokenizer) } : {}),
    },
    compacted,
    adapted,
  };
}

/** The episodes of both lists, one a turn (the later list's where both have it), oldest first. */
function byTurn(...lists: (readonly Episode[])[]): Episode[] {
  const turns = new Map<number, Episode>();
  for (const list of lists) for (const episode of list) turns.set(episode.turn_id, episode);
  return [...turns.values()].sort((a, b) => a.turn_id - b.turn_id);
}

/** The session's arena after an agent replied: the largest prompt a model of this turn reported it was sent. */
export function observeUsage(state: ContextArenaState, usage: Usage | undefined): ContextArenaState {
  if (usage === undefined || usage.prompt_tokens <= state.observed_tokens) return state;
  return { ...state, observed_tokens: usage.prompt_tokens };
}

/** The agent context without the memory items the plan dropped, with the summary. */
function plannedContext(context: AgentContext, plan: ContextPlan, summary: ContextSummary | null): AgentContext {
  const kept = new Set(Object.values(plan.report.zones).flatMap((zone) => zone.kept));
  const keep = <T>(items: T[] | undefined, id: (item: T, index: number) => string) =>
    items?.filter((item, index) => kept.has(id(item, index)));
  const planned: AgentContext = {
    ...context,
    episodes: context.episodes.filter((episode) => kept.has(`episode:${episode.turn_id}`)),
    ...(summary && kept.has("summary") ? { summary } : {}),
  };
  if (context.user_facts) planned.user_facts = keep(context.user_facts, (_, index) => `user_fact:${index}`)!;
  if (context.open_threads) planned.open_threads = keep(context.open_threads, (_, index) => `thread:${index}`)!;
  if (context.procedures) planned.procedures = keep(context.procedures, (_, index) => `procedure:${index}`)!;
  // The persona as the plan kept it: cut to its zone's budget when longer; left out when dropped.
  const persona = plan.kept.persona;
  if (persona === undefined) delete planned.persona;
  else planned.persona = persona;
  if (context.ledgers) {
    const { goal, ...task } = context.ledgers.task;
    const workers = context.ledgers.workers;
    planned.ledgers = {
      ...context.ledgers,
      ...(workers
        ? {
            workers: {
              pending: workers.pending.filter((_, index) => kept.has(`worker_result:${index}`)),
              merged: kept.has("worker_merge") ? workers.merged : [],
            },
          }
        : {}),
      facts: context.ledgers.facts.filter((_, index) => kept.has(`fact:${index}`)),
      task: {
        ...task,
        ...(goal !== undefined && kept.has("goal") ? { goal } : {}),
        open_items: task.open_items.filter((_, index) => kept.has(`item:${index}`)),
        open_blockers: task.open_blockers.filter((_, index) => kept.has(`blocker:${index}`)),
      },
    };
  }
  if (context.tool_failures)
    planned.tool_failures = keep(context.tool_failures, (_, index) => `tool_failure:${index}`)!;
  if (context.knowledge) planned.knowledge = keep(context.knowledge, (_, index) => `passage:${index}`)!;
  if (context.supplemental) planned.supplemental = plannedSupplements(context, plan)!;
  return planned;
}

/**
 * The arena the environment configures: CONCLAVE_CONTEXT_*, CONCLAVE_RECALL_MODE and, to count tokens,
 * CONCLAVE_LLM_MODEL.
 */
export function arenaPolicyFromEnv(env: NodeJS.ProcessEnv = process.env): ArenaPolicy {
  const model = setting(env, "CONCLAVE_LLM_MODEL");
  const recallMode = setting(env, "CONCLAVE_RECALL_MODE");
  const maxEntries = setting(env, "CONCLAVE_CONTEXT_MAX_ENTRIES");
  return {
    ...(setting(env, "CONCLAVE_CONTEXT_ADAPTIVE_ZONES") ? {} : { adaptive_zones: false }),
    ...(maxEntries !== undefined ? { max_entries: maxEntries } : {}),
    budget: contextBudgetFromEnv(env),
    ...(model ? { model } : {}),
    ...(recallMode === "fallback" ? { recall_mode: recallMode } : {}),
  };
}
