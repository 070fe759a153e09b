/**
 * Event levels: how much of a turn the event log records. Every event kind
 * has the lowest level at which it is recorded; a writer at a level stores
 * the kinds at or below it and drops the rest before they are published
 * (EventLogWriter). A level never changes what a turn does: the machines
 * run the same and emit the same events; only the record is thinner.
 *
 * - `audit`: what governance needs, and everything a reader of the log
 *   depends on to take a turn over, replay a session or verify it.
 * - `ops` (the default): everything recorded before levels existed.
 * - `debug`: ops and detail too costly to record by default: STEP_TIMED, one
 *   event per call of the turn's services (memory, the scheduler, each agent,
 *   deliberation, the council, the voice, the critics), with how long it took.
 */
import { setting } from "../config/load.ts";
import { EVENT_KINDS, type EventKind } from "../contracts/events.ts";

/** The levels, thinnest first. */
export const EVENT_LEVELS = ["audit", "ops", "debug"] as const;
/** How much of a turn the event log records (`CONCLAVE_EVENT_LEVEL`). */
export type EventLevel = (typeof EVENT_LEVELS)[number];

/**
 * The lowest level at which each kind is recorded.
 *
 * Why the `audit` kinds are audit (each has at least one of these reasons):
 * - the turn's frame and outcome: TURN_STARTED (what was asked), TURN_COMPLETED (the reply, outcome and
 *   usage: cost, status and idempotency read it; a takeover settles a turn that has it), TURN_RESUMED
 *   (replay and takeover count attempts from it), STAGE_WARNING (errors);
 * - governance: interceptions and safety interrupts, tool calls requested, approved, denied, started
 *   (its idempotency key), finished and rolled back, delegations, approvals asked and answered
 *   (HUMAN_INPUT_*), suspensions, the memory retrieved and committed (what the turn read and kept);
 * - the skills' lifecycle (SKILL_ACTIVATED, SKILL_COMPLETED): skill outputs are read back from the log;
 * - usage-bearing model steps, which a takeover answers from the log rather than asking a model again
 *   (src/runtime/turnServices/recordedSteps.ts, recordedToolSteps.ts): SCHEDULE_PLANNED, AGENT_COMPLETED/FAILED,
 *   CONSENSUS_UPDATED with DELIB_ROUND_COMPLETED (a round needs both), COUNCIL_DECISION_MADE,
 *   VOICE_RENDERED, CRITICS_UPDATED, MODEL_CALL_COMPLETED;
 * - the session state's replay (src/runtime/replay.ts, `conclave verify`): SENSORS_FAST_UPDATED
 *   (modulators), STANCE_UPDATED, CONTEXT_PLANNED and CONTEXT_COMPACTED (the context arena);
 * - a recipe run's graph and its takeover (recipeStart.ts, the simulation trace): RECIPE_STARTED,
 *   PREFLIGHT_CHECKED, NODE_STARTED (its checkpoints), NODE_COMPLETED/FAILED, ROUTE_TAKEN, EVALUATION_SCORED;
 * - SESSION_FORKED: where a forked session came from, and the state its replay starts from;
 * - SKILL_ACTIVATED and SKILL_COMPLETED: what an agent took up and what it gave (governance);
 * - WORKING_MEMORY_UPDATED: the session's working memory lives only in the log (its last one is the memory);
 * - STREAM_START and STREAM_END: a few bytes that frame each stream for live readers (their chunks still
 *   go out live, src/client/liveChunks.ts) and mark a stream a takeover restarted.
 *
 * `ops` only: progress markers a reader can do without (TURN_QUEUED, TURN_STAGE_CHANGED, WAVE_STARTED,
 * WAVE_COMPLETED, DELIB_ROUND_STARTED, WORKSPACE_PATCHED: each is re-emitted and simply not stored again
 * when a takeover replays the turn) and the streams' text (STREAM_CHUNK), most of a turn's bytes, which
 * VOICE_RENDERED and TURN_COMPLETED hold whole.
 */
export const EVENT_KIND_LEVELS = {
  TURN_STARTED: "audit",
  TURN_STAGE_CHANGED: "ops",
  TURN_QUEUED: "ops",
  STEP_TIMED: "debug",
  TURN_RESUMED: "audit",
  SESSION_FORKED: "audit",
  SENSORS_FAST_UPDATED: "audit",
  REQUEST_INTERCEPTED: "audit",
  RESPONSE_INTERCEPTED: "audit",
  SAFETY_INTERRUPT: "audit",
  MEMORY_RETRIEVED: "audit",
  WORKSPACE_PATCHED: "ops",
  CONTEXT_COMPACTED: "audit",
  CONTEXT_PLANNED: "audit",
  // A notice: the adaptation itself is in CONTEXT_PLANNED, which a replay reads.
  CONTEXT_ZONES_ADAPTED: "ops",
  SCHEDULE_PLANNED: "audit",
  WAVE_STARTED: "ops",
  AGENT_COMPLETED: "audit",
  AGENT_FAILED: "audit",
  WAVE_COMPLETED: "ops",
  STANCE_UPDATED: "audit",
  DELIB_ROUND_STARTED: "ops",
  CONSENSUS_UPDATED: "audit",
  DELIB_ROUND_COMPLETED: "audit",
  COUNCIL_DECISION_MADE: "audit",
  STREAM_START: "audit",
  STREAM_CHUNK: "ops",
  STREAM_END: "audit",
  VOICE_RENDERED: "audit",
  CRITICS_UPDATED: "audit",
  MEMORY_COMMITTED: "audit",
  STAGE_WARNING: "audit",
  TURN_COMPLETED: "audit",
  RECIPE_STARTED: "audit",
  PREFLIGHT_CHECKED: "audit",
  NODE_STARTED: "audit",
  NODE_COMPLETED: "audit",
  NODE_FAILED: "audit",
  ROUTE_TAKEN: "audit",
  EVALUATION_SCORED: "audit",
  HUMAN_INPUT_REQUESTED: "audit",
  TURN_SUSPENDED: "audit",
  HUMAN_INPUT_RECEIVED: "audit",
  MODEL_CALL_COMPLETED: "audit",
  TOOL_CALL_REQUESTED: "audit",
  TOOL_CALL_APPROVED: "audit",
  TOOL_CALL_DENIED: "audit",
  TOOL_CALL_STARTED: "audit",
  AGENT_DELEGATED: "audit",
  TOOL_CALL_ROLLED_BACK: "audit",
  TOOL_CALL_FINISHED: "audit",
  SKILL_ACTIVATED: "audit",
  SKILL_COMPLETED: "audit",
  WORKING_MEMORY_UPDATED: "audit",
} as const satisfies Record<EventKind, EventLevel>;

const rank = (level: EventLevel): number => EVENT_LEVELS.indexOf(level);

/** The lowest level `kind` is recorded at; a kind without one (never, once type-checked) is audit: always kept. */
export const levelOf = (kind: EventKind): EventLevel =>
  (EVENT_KIND_LEVELS as Partial<Record<EventKind, EventLevel>>)[kind] ?? "audit";

/** The kinds a writer at `level` stores: a Set, so the writer's check is one lookup per event. */
export function recordedKinds(level: EventLevel): ReadonlySet<EventKind> {
  const limit = rank(level);
  return new Set(EVENT_KINDS.filter((kind) => rank(levelOf(kind)) <= limit));
}

/** The level in force: `CONCLAVE_EVENT_LEVEL` (a bad value is a one-line "config" error), else `ops`. */
export function eventLevelFromEnv(env: NodeJS.ProcessEnv = process.env): EventLevel {
  return setting(env, "CONCLAVE_EVENT_LEVEL");
}
