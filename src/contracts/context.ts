import { z } from "zod";
import { SupplementCitation } from "./supplement.ts";
import { Usage } from "./usage.ts";

/**
 * The context arena's wire shapes (docs/context.md): what a session keeps of
 * its context from turn to turn, and the payloads of CONTEXT_PLANNED and
 * CONTEXT_COMPACTED.
 */

/** The zones of a planned context, in their fixed order. */
export const ContextZone = z.enum([
  "identity_persona",
  "truth",
  "task_state",
  "tool_failures",
  "supplemental",
  "working_memory",
  "recall",
  "rag_external",
]);
export type ContextZone = z.infer<typeof ContextZone>;

/** A compaction summary: the session's turns up to `through_turn`, in short. */
export const ContextSummarySchema = z.object({
  through_turn: z.number().int().min(0),
  text: z.string().max(64_000),
});

/** The longest summary memory's model is asked for, in tokens (a bound above it is asked as this). */
export const MAX_SUMMARY_TOKENS = 64_000;

/**
 * What a turn that will compact asks of memory with its read of the conversation (docs/context.md,
 * "Compaction"): memory's model folds the turns it reads into the summary. A memory service with no
 * model ignores it, and the turn compacts offline.
 */
export const SummariseAsk = z.object({
  /** The session's summary so far (null: none yet). */
  previous: ContextSummarySchema.nullable(),
  /** The newest turns left as they are: the summary folds in the turns read before them. */
  keep_recent_turns: z.number().int().min(0).max(1_000),
  /** The bound of the new summary, in tokens. */
  max_tokens: z.number().int().min(1).max(MAX_SUMMARY_TOKENS),
  /** A compaction request's instructions, for the model's prompt. */
  instructions: z.string().max(4_000).optional(),
  /** The model whose encoding counts the bound (the arena policy's `model`); absent: the arena's approximation. */
  tokenizer_model: z.string().max(200).optional(),
  /**
   * How long the model may take: past it, memory answers the read without a summary (the turn compacts
   * offline). The turn gives half its stage deadline; absent: 5 s.
   */
  deadline_ms: z.number().int().min(1).max(600_000).optional(),
});
export type SummariseAsk = z.infer<typeof SummariseAsk>;

/** Memory's answer to a {@link SummariseAsk}: the new summary, the turns it folded in, and the call's usage. */
export const ModelSummary = z.object({
  through_turn: z.number().int().min(0),
  text: z.string().max(64_000),
  /** The turns folded into it, oldest first (the arena uses it only for exactly the turns it compacts). */
  turns: z.array(z.number().int().min(1)).max(1_000),
  /** The summariser's model call, with the model it ran on: the turn's cost counts it (`context:compaction`). */
  usage: Usage,
});
export type ModelSummary = z.infer<typeof ModelSummary>;

/**
 * The session's compaction summary as its arena carries it: the turn it covers through, the turn whose
 * log holds its text (`compacted_in`: its CONTEXT_COMPACTED, or a fork's SESSION_FORKED), and the text.
 * The stored snapshot keeps the reference and not the text (a KV key's superseded revisions outlive an
 * erase; the event log is erased whole): the runner reads the text back from the log when it loads the
 * session (src/runtime/sessionSummary.ts), and holds it in memory from then on.
 */
export const ArenaSummary = z.object({
  through_turn: z.number().int().min(0),
  /** The summary's text; absent in a stored snapshot whose `compacted_in` names where it is. */
  text: z.string().max(64_000).optional(),
  /** The turn whose log holds the text; absent in snapshots written before it existed (they hold the text). */
  compacted_in: z.number().int().min(0).optional(),
});
export type ArenaSummary = z.infer<typeof ArenaSummary>;

/** What a session carries of its context from one turn to the next (in its snapshot). */
/**
 * A session's adapted zone caps (src/context/adaptiveZones.ts): each grown cap as a share of the
 * budget, and the streaks under way (turns a zone lost items to its cap; turns a grown zone's demand
 * fitted its usual cap). Empty records: nothing adapted.
 */
export const ZoneAdaptation = z.object({
  caps: z.partialRecord(ContextZone, z.number().min(0).max(1)),
  starved: z.partialRecord(ContextZone, z.number().int().min(1)),
  relaxed: z.partialRecord(ContextZone, z.number().int().min(1)),
});
export type ZoneAdaptation = z.infer<typeof ZoneAdaptation>;

/** One cap that moved: CONTEXT_ZONES_ADAPTED names each. */
export const ZoneAdaptationChange = z.object({
  zone: ContextZone,
  from_share: z.number().min(0).max(1),
  to_share: z.number().min(0).max(1),
  /** `starved`: it lost items to its cap for `turns` turns in a row; `relaxed`: its demand fitted its usual cap again. */
  reason: z.enum(["starved", "relaxed"]),
  turns: z.number().int().min(1),
});
export type ZoneAdaptationChange = z.infer<typeof ZoneAdaptationChange>;

/** CONTEXT_ZONES_ADAPTED: the session's zone caps moved after a turn (adaptive zones). */
export const ContextZonesAdaptedPayload = z.object({ changes: z.array(ZoneAdaptationChange).min(1) });

export const ContextArenaState = z.object({
  /** The compaction summary of the session's older turns; null before the first compaction. */
  summary: ArenaSummary.nullable(),
  /** The largest prompt_tokens an agent reply of the session's last turn reported (0: none reported). */
  observed_tokens: z.number().int().min(0),
  /** Compactions run in the session so far. */
  compactions: z.number().int().min(0),
  /**
   * The stream sequence of the last compaction request a compaction consumed (its COMPACTION_REQUESTED);
   * absent: none. A later request is pending (docs/context.md, "Compaction requests").
   */
  compaction_request_seq: z.number().int().min(1).optional(),
  /**
   * The stream sequence of the last supplement a turn consumed (its SUPPLEMENT_COMMITTED); absent: none.
   * Later ones are pending (docs/context.md, "Supplemental injection").
   */
  supplement_seq: z.number().int().min(1).optional(),
  /** The session's adapted zone caps; absent: none (and in states stored before 0.3.0). */
  zones: ZoneAdaptation.optional(),
});
export type ContextArenaState = z.infer<typeof ContextArenaState>;

/** A session's arena before its first turn. */
export const emptyArenaState = (): ContextArenaState => ({ summary: null, observed_tokens: 0, compactions: 0 });

const Tokens = z.number().int().min(0);

export const ContextPressure = z.object({
  level: z.enum(["normal", "compact", "critical"]),
  ratio: z.number().min(0),
  usage_tokens: Tokens,
  total_tokens: Tokens,
});

/** One zone of a CONTEXT_PLANNED. */
const PlannedZone = z.object({
  floor: Tokens,
  cap: Tokens,
  demand_tokens: Tokens,
  tokens: Tokens,
  kept: z.array(z.string()).max(1_000),
  dropped: z.array(z.string()).max(1_000),
});
const EMPTY_ZONE = { floor: 0, cap: 0, demand_tokens: 0, tokens: 0, kept: [], dropped: [] };

/** CONTEXT_PLANNED: what the turn's agents are shown, zone by zone, and what was left out. */
export const ContextPlannedPayload = z.object({
  /** The encoding tokens were counted with, and whether it is the model's own (else an approximation). */
  encoding: z.string(),
  encoding_exact: z.boolean(),
  pressure: ContextPressure,
  target_tokens: Tokens,
  planned_tokens: Tokens,
  // A zone added in a later release is absent from the events of an earlier one: read as empty there.
  zones: z.preprocess(
    (zones) =>
      typeof zones === "object" && zones !== null
        ? { ...Object.fromEntries(ContextZone.options.map((zone) => [zone, EMPTY_ZONE])), ...zones }
        : zones,
    z.record(ContextZone, PlannedZone),
  ),
  dropped: z
    .array(
      z.object({
        zone: ContextZone,
        id: z.string(),
        tokens: Tokens,
        reason: z.enum(["zone_cap", "budget", "budget_below_floor"]),
      }),
    )
    .max(1_000),
  truncated: z.array(z.string()).max(1_000),
  floors_relaxed: z.boolean(),
  /**
   * The recall zone was skipped (CONCLAVE_RECALL_MODE=fallback at compact or critical pressure): why, and
   * the items it held (also in `zones.recall.dropped`). Absent: recall was planned.
   */
  recall_skipped: z
    .object({ mode: z.literal("fallback"), pressure: z.enum(["compact", "critical"]), items: z.number().int().min(0) })
    .optional(),
  /** The arena's entry limit (CONCLAVE_CONTEXT_MAX_ENTRIES) left these items out (also in their zones' `dropped`). */
  entries_limited: z
    .object({ max_entries: z.number().int().min(1), dropped: z.array(z.string()).max(1_000) })
    .optional(),
  /** The session's zone adaptation after this turn (a replay reads it from here); absent: nothing adapted. */
  adaptation: ZoneAdaptation.optional(),
  /** The supplements this turn consumed, each with what the plan kept of it; absent: none was pending. */
  supplemental: z.array(SupplementCitation).max(64).optional(),
});

/** CONTEXT_COMPACTED: older turns folded into the session's summary. */
export const ContextCompactedPayload = z.object({
  summariser: z.enum(["offline", "model"]),
  /** What set it off: the pressure, or a compaction request (absent in earlier releases' events: the pressure). */
  reason: z.enum(["pressure", "requested"]).optional(),
  /** A request's: the stream sequence of the COMPACTION_REQUESTED it consumed, and why it was asked. */
  request_seq: z.number().int().min(1).optional(),
  request_reason: z.string().max(500).optional(),
  /** The instructions the summariser was given (the request's, or CONCLAVE_COMPACTION_INSTRUCTIONS). */
  instructions: z.string().max(4_000).optional(),
  /** The pressure that set it off. */
  pressure: ContextPressure,
  through_turn: z.number().int().min(0),
  turns_compacted: z.array(z.number().int()).max(1_000),
  tokens_before: Tokens,
  tokens_after: Tokens,
  summary: z.string().max(64_000),
  /**
   * The model summariser's call (`summariser: "model"`), with the model it ran on: counted in the turn's
   * `usage.by_actor["context:compaction"]`, and read back by a takeover instead of asking again.
   */
  usage: Usage.optional(),
});

/**
 * When the recall zone is planned: `primary` always; `fallback` only while the context pressure is normal
 * (CONCLAVE_RECALL_MODE).
 */
export const RecallMode = z.enum(["primary", "fallback"]);
export type RecallMode = z.infer<typeof RecallMode>;

/** The budget of every session a runner hosts. */
export interface ContextBudget {
  /** The most tokens a planned context may take. */
  total_tokens: number;
  /** Pressure from which older turns are compacted. */
  compact_ratio: number;
  /** Pressure from which heavy tool calls are refused until compaction has run. */
  critical_ratio: number;
  /** A tool output longer than this is truncated before it enters a context. */
  tool_output_tokens: number;
}

/** How a session's older turns are compacted (src/context/compaction.ts). */
export interface CompactionSettings {
  /** The newest turns kept as they are (not summarised). */
  keep_recent_turns: number;
  /** The most tokens the summary may take. */
  max_tokens: number;
}

/** How a runner plans its sessions' contexts (TurnPolicy's `context`; src/context/arena.ts plans with it). */
export interface ArenaPolicy {
  budget: ContextBudget;
  /** The model whose encoding counts tokens; absent: the approximation (src/context/tokenizer.ts). */
  model?: string;
  compaction?: Partial<CompactionSettings>;
  /** When the recall zone is planned (default `primary`: always). */
  recall_mode?: RecallMode;
  /** Zone caps adapt to the session's demand (src/context/adaptiveZones.ts). Default true. */
  adaptive_zones?: boolean;
  /** The most items a planned context keeps (the arena's entry limit). Default: no limit. */
  max_entries?: number;
}
