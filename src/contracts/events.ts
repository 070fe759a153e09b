import { z } from "zod";
import { Contribution } from "./agent.ts";
import { ContextCompactedPayload, ContextPlannedPayload, ContextZonesAdaptedPayload } from "./context.ts";
import { ReplyFallback, StreamId } from "./council.ts";
import { CriticResult, CriticsVerdict } from "./critic.ts";
import { ErrorCode } from "./errors.ts";
import { checkRecordFormat } from "./format.ts";
import { SessionId, TurnId } from "./ids.ts";
import { MemoryRetrievedPayload } from "./memory.ts";
import { AgentsPipeline } from "./pipeline.ts";
import { RecipeEventPayloads } from "./recipeRun.ts";
import { PlanWavesReply } from "./scheduler.ts";
import { SkillEventPayloads } from "./skill.ts";
import { ToolEventPayloads } from "./tool.ts";
import { Stage, TurnOutcome, TurnWarning } from "./turn.ts";
import { TurnUsage, Usage } from "./usage.ts";
import { WorkingMemoryEventPayloads } from "./workingMemory.ts";
import { Claim, Modulators, Sensors, Stance, StanceDelta } from "./workspace.ts";

/**
 * Every event kind a turn writes, each with its payload schema. The order in
 * which a turn emits them is fixed by the turn statechart (machines/turn/).
 */
export const EventPayloads = {
  TURN_STARTED: z.object({
    user_input: z.string(),
    turn_id: TurnId,
    user_id: z.string().optional(),
    /** A turn of the `agents` pipeline: the user's agents it runs (absent: the built-in pipeline). */
    pipeline: AgentsPipeline.optional(),
  }),
  TURN_STAGE_CHANGED: z.object({ stage: Stage }),
  /**
   * The runner had no place for the turn when it took it: it waits, its entry held, and starts
   * (TURN_STARTED) when one frees. `position`: turns waiting ahead of it, plus one, when it was queued.
   */
  TURN_QUEUED: z.object({ position: z.number().int().min(1) }),
  /**
   * One call of the turn's services timed (`debug` level only): which `step` (a TurnServices call:
   * `retrieveMemory`, `callAgent`, `decide`…), the agent asked when it is an agent call, how long it
   * took on the runner's clock, and whether it answered. A step answered from the log after a takeover
   * is not timed.
   */
  STEP_TIMED: z.object({
    step: z.string(),
    agent_id: z.string().optional(),
    elapsed_ms: z.number(),
    ok: z.boolean(),
  }),
  /** A runner took over a turn whose runner died (the events up to `after_seq` are the earlier attempt's). */
  TURN_RESUMED: z.object({
    attempt: z.number().int().min(2),
    after_seq: z.number().int().min(-1),
    previous_runner: z.string().optional(),
    /**
     * Where the turn goes on. `last_step` (a pipeline turn): the steps already recorded stand and are not made
     * again; the events after TURN_RESUMED continue the turn. Absent (`ingest`): the turn runs again from
     * ingest, and the events up to `after_seq` are the abandoned attempt.
     */
    from: z.enum(["ingest", "last_step"]).optional(),
  }),
  SENSORS_FAST_UPDATED: z.object({ sensors: Sensors }),
  /** A request interceptor redacted the user's message or refused the turn (it acts on what agents and models see). */
  REQUEST_INTERCEPTED: z.object({ interceptor: z.string(), action: z.enum(["redact", "block"]), reason: z.string() }),
  /** A response interceptor changed or dropped a streamed packet. */
  RESPONSE_INTERCEPTED: z.object({
    interceptor: z.string(),
    action: z.enum(["redact", "block"]),
    reason: z.string(),
    stream_id: StreamId,
  }),
  SAFETY_INTERRUPT: z.object({ reason: z.string(), sensor: z.string(), value: z.number() }),
  /**
   * What the context stage retrieved, by reference (episodes' turns, facts', threads' and procedures'
   * node ids; whether the ledgers' digest was given), none of its text: the text lives only in its
   * source. A log written before references holds the text itself (episodes, user facts, …): read too.
   */
  MEMORY_RETRIEVED: MemoryRetrievedPayload,
  WORKSPACE_PATCHED: z.object({ patch: z.record(z.string(), z.unknown()) }),
  /** The session's older turns folded into its summary, at the configured pressure (docs/context.md). */
  CONTEXT_COMPACTED: ContextCompactedPayload,
  /** What the turn's agents are shown, zone by zone, what was dropped, and the pressure on the budget. */
  CONTEXT_PLANNED: ContextPlannedPayload,
  /** The session's zone caps moved after the turn's plan (adaptive zones, docs/context.md). */
  CONTEXT_ZONES_ADAPTED: ContextZonesAdaptedPayload,
  /** The scheduler's plan: the waves, every candidate's score, who was left out and why, the token budget. */
  SCHEDULE_PLANNED: PlanWavesReply,
  WAVE_STARTED: z.object({ wave: z.number().int(), agent_count: z.number().int(), agents: z.array(z.string()) }),
  AGENT_COMPLETED: z.object({
    wave: z.number().int(),
    agent_id: z.string(),
    /** The agent's own output, valid against the output schema it announced; absent when its output is its contribution. */
    output: z.unknown().optional(),
    /** What the council took from it (the council contract). */
    contribution: Contribution,
    elapsed_ms: z.number(),
    worker: z.string(),
    /** Tokens the answer used (a takeover counts them without asking the agent again). */
    usage: Usage.optional(),
    /** Ids of the skills loaded into the agent's context (its worker has a skills directory). */
    skills: z.array(z.string()).optional(),
    /** Tokens the worker's skill routing embedded the message with for this call, with its model (`skills:routing`). */
    routing_usage: Usage.optional(),
    /** The identity file the agent was given (path and SHA-256 of its text; docs/context.md, "Identity files"). */
    identity: z.object({ path: z.string(), sha256: z.string() }).optional(),
  }),
  AGENT_FAILED: z.object({
    wave: z.number().int(),
    agent_id: z.string(),
    code: ErrorCode,
    message: z.string(),
  }),
  WAVE_COMPLETED: z.object({ wave: z.number().int(), results: z.number().int(), failed: z.number().int() }),
  STANCE_UPDATED: z.object({ delta: StanceDelta, current: Stance, modulators: Modulators }),
  DELIB_ROUND_STARTED: z.object({ round: z.number().int() }),
  CONSENSUS_UPDATED: z.object({ round: z.number().int(), level: z.number(), claims: z.array(Claim) }),
  DELIB_ROUND_COMPLETED: z.object({
    round: z.number().int(),
    consensus: z.number(),
    /** Agents asked to reconsider contested claims in this round, and what they changed. */
    revisions: z.array(
      z.object({
        agent_id: z.string(),
        withdrew: z.array(z.string()),
        conceded: z.array(z.string()),
        opposed: z.array(z.string()),
      }),
    ),
    /** The council's proposals after the round (revisions may add some); a takeover goes on from them. */
    proposals: z
      .array(z.object({ source: z.string(), kind: z.enum(["say", "do_not", "ask"]), text: z.string() }))
      .optional(),
    /** Tokens the round's revisions used, per actor. */
    usage: z.record(z.string(), Usage).optional(),
  }),
  COUNCIL_DECISION_MADE: z.object({
    speak: z.boolean(),
    urgency: z.string(),
    intent: z.string(),
    key_points: z.array(z.string()),
    do_not: z.array(z.string()),
    thinking: z.string(),
    /** Tokens the council used. */
    usage: Usage.optional(),
    /** The deterministic council answered in place of the one that failed (a takeover replays the warning from it). */
    fallback: ReplyFallback.optional(),
  }),
  /** A named stream opens (multiplexed streams): chunks of it follow until STREAM_END. */
  STREAM_START: z.object({
    stream_id: StreamId,
    content_type: z.string(),
    attempt: z.number().int(),
    /**
     * The stream starts over after a takeover cut it off: the chunks of its earlier STREAM_START (same
     * stream_id) are void, and its chunks count from index 0 again.
     */
    restarted: z.literal(true).optional(),
  }),
  /**
   * Text of a stream. Live (core NATS, `conclave.live.<session>.<turn>`) each chunk is one event; the log
   * stores a stream's chunks coalesced: one STREAM_CHUNK holding `chunks` consecutive live chunks from `index`,
   * `delta` their text joined. The text of a stream is the same either way.
   */
  STREAM_CHUNK: z.object({
    stream_id: StreamId,
    /** The first (or only) live chunk it holds, counted per stream from 0. */
    index: z.number().int().min(0),
    delta: z.string(),
    /** How many live chunks it holds (`index` to `index + chunks - 1`); absent: one. */
    chunks: z.number().int().min(1).optional(),
  }),
  STREAM_END: z.object({ stream_id: StreamId, chunks: z.number().int().min(0) }),
  VOICE_RENDERED: z.object({
    text: z.string(),
    attempt: z.number().int(),
    /** Tokens the rendering used. */
    usage: Usage.optional(),
    /** The deterministic voice rendered in place of the one that failed (a takeover replays the warning from it). */
    fallback: ReplyFallback.optional(),
  }),
  CRITICS_UPDATED: z.object({
    results: z.array(CriticResult),
    passed: z.boolean(),
    attempt: z.number().int(),
    /** Critics that could not judge (each a STAGE_WARNING too). */
    failures: CriticsVerdict.shape.failures.optional(),
    /** Tokens the critics used, per critic. */
    usage: z.record(z.string(), Usage).optional(),
  }),
  MEMORY_COMMITTED: z.object({
    summary: z.string(),
    stored: z.boolean(),
    /** Phases of the commit that failed (each a STAGE_WARNING too). */
    warnings: z.array(TurnWarning).optional(),
    /** Tokens of the commit's model calls (fact extraction, embeddings), by source, each with its model. */
    usage: z.record(z.string(), Usage).optional(),
    /** The insights the commit raised for the first time, by id (no text: docs/memory.md, "Insights"). */
    insights: z.array(z.string()).optional(),
  }),
  STAGE_WARNING: TurnWarning,
  TURN_COMPLETED: z.object({
    total_time_ms: z.number(),
    response: z.string(),
    outcome: TurnOutcome,
    /** Tokens used, in total and per actor: the turn's cost summary. */
    usage: TurnUsage,
    /** A recipe run's result: its final blackboard (absent for the built-in pipeline's turns). */
    output: z.record(z.string(), z.unknown()).optional(),
  }),
  /**
   * The first event of a forked session (`conclave fork`, docs/tape.md), stored as its fork turn's only event:
   * where it came from, and the source's state at the fork point of the domains not copied as events (`state`:
   * the session snapshot, cost and memory digest; checked where it is folded). `copied`: what was copied, per store.
   */
  SESSION_FORKED: z.object({
    from_session: SessionId,
    at_turn: TurnId,
    state: z.record(z.string(), z.unknown()),
    copied: z.record(z.string(), z.number().int().min(0)),
  }),
  ...RecipeEventPayloads,
  ...ToolEventPayloads,
  ...SkillEventPayloads,
  ...WorkingMemoryEventPayloads,
} as const;

/** The name of an event kind: `TURN_STARTED`, `AGENT_COMPLETED`, `TURN_COMPLETED`, … */
export type EventKind = keyof typeof EventPayloads;
export const EVENT_KINDS = Object.keys(EventPayloads) as EventKind[];
export const EventKindSchema = z.enum(EVENT_KINDS as [EventKind, ...EventKind[]]);

/** The payload of events of kind `K`. */
export type EventPayload<K extends EventKind> = z.infer<(typeof EventPayloads)[K]>;

/** A kind together with its payload: what the turn machine asks its host to record. */
export type EventBody = { [K in EventKind]: { kind: K; payload: EventPayload<K> } }[EventKind];

/** What every event carries besides its kind and payload. */
export const EventEnvelope = {
  session_id: SessionId,
  turn_id: TurnId,
  /** Contiguous from 0 within a turn. */
  seq: z.number().int().min(0),
  /** Milliseconds on the writer's monotonic clock (performance.timeOrigin + performance.now()). */
  ts_monotonic: z.number(),
};

/** One entry of the ordered event log, as stored on `conclave.events.<i>.<session_id>.<turn_id>`. */
export const EngineEvent = z.discriminatedUnion(
  "kind",
  EVENT_KINDS.map((kind) =>
    z.object({ ...EventEnvelope, kind: z.literal(kind), payload: EventPayloads[kind] }),
  ) as unknown as [z.ZodObject<{ kind: z.ZodLiteral<EventKind> }>, ...z.ZodObject<{ kind: z.ZodLiteral<EventKind> }>[]],
);
export type EngineEvent = z.infer<z.ZodObject<typeof EventEnvelope>> & EventBody;

/**
 * A stored event's JSON read as an event. A record of a newer format than this process reads is
 * refused with `FormatTooNewError` (contracts/format.ts) (thrown, not reported as invalid: misreading it would be
 * worse); an older one, or one without a version, is parsed as always. `where` names it in the error.
 */
export function parseStoredEvent(json: unknown, where: string): ReturnType<typeof EngineEvent.safeParse> {
  checkRecordFormat(json, where);
  return EngineEvent.safeParse(json);
}

/**
 * One stream chunk as published live on core NATS (`conclave.live.<session>.<turn>`), one message per chunk,
 * before the log stores it coalesced with others. `seq` is the seq of the stored STREAM_CHUNK that will hold it
 * (several live chunks share it); every stored event up to `after_seq` comes before it. `writer` names the
 * writer of the turn's log: a turn taken over is written by another, whose live chunks replace the first's.
 */
export const LiveChunk = z.object({
  ...EventEnvelope,
  kind: z.literal("STREAM_CHUNK"),
  payload: EventPayloads.STREAM_CHUNK,
  after_seq: z.number().int().min(-1),
  writer: z.string().min(1).max(64),
});
export type LiveChunk = z.infer<typeof LiveChunk>;
