import { assign, enqueueActions, fromCallback, fromPromise, setup } from "xstate";
import { CONSENSUS_THRESHOLD, MAX_DELIBERATION_ROUNDS } from "../src/cognition/deliberation.ts";
import { SAFETY_INTERRUPT_THRESHOLD } from "../src/cognition/sensors.ts";
import {
  applyAgentOutput,
  modulatorsFromSensors,
  stanceDifference,
  type Workspace,
} from "../src/cognition/workspace.ts";
import type { AgentContext, AgentReply } from "../src/contracts/agent.ts";
import type {
  CouncilDecision,
  CouncilReply,
  CouncilRequest,
  SafetyCouncilReply,
  SafetyCouncilRequest,
  StreamId,
  VoiceRequest,
} from "../src/contracts/council.ts";
import type { CriticRequest, CriticResult, CriticsVerdict } from "../src/contracts/critic.ts";
import type { ErrorCode } from "../src/contracts/errors.ts";
import type { EventBody, EventPayload } from "../src/contracts/events.ts";
import type {
  MemoryCommitReply,
  MemoryCommitRequest,
  MemoryRetrieveReply,
  MemoryRetrieveRequest,
} from "../src/contracts/memory.ts";
import type { PlanWavesReply, PlanWavesRequest } from "../src/contracts/scheduler.ts";
import { type Stage, type TurnOutcome, type TurnWarning, turnOutcome } from "../src/contracts/turn.ts";
import { addUsage, noUsage, type TurnUsage, type Usage } from "../src/contracts/usage.ts";
import type { Episode, Modulators, Sensors, Stance } from "../src/contracts/workspace.ts";

/**
 * The turn statechart: one user turn through the pipeline
 *
 *   ingest → sensing_fast → (safety → completed)
 *          → context → agents (waves) → deliberation (≤ N rounds)
 *          → council (+ voice) → critics → memory_commit → completed
 *
 * The machine is pure. Every piece of work is an invoked actor and every
 * event of the log is a `record` action; the process hosting the machine
 * supplies both with `turnMachine.provide(...)`. Each stage has a deadline
 * (`stageTimeout`): a stage that fails or overruns adds a warning and the
 * turn goes on, so a turn always reaches `completed` with an outcome.
 */

export interface TurnPolicy {
  /** Deadline of each stage. */
  stage_timeout_ms: number;
  /** Budget of one attempt of an agent request inside a wave. */
  agent_timeout_ms: number;
  /**
   * Attempts per agent request: a request lost with its worker (no answer in
   * time) is sent again, and goes to another worker of the same agent.
   */
  agent_attempts: number;
  max_deliberation_rounds: number;
  /** Re-renderings the evaluator loop may ask of the voice after critic feedback. */
  max_voice_retries: number;
  /** Tokens the turn's agents may use in all (the scheduler plans within it). */
  token_budget: number;
}

export const defaultTurnPolicy: TurnPolicy = {
  stage_timeout_ms: 10_000,
  agent_timeout_ms: 4_000,
  agent_attempts: 2,
  max_deliberation_rounds: MAX_DELIBERATION_ROUNDS,
  max_voice_retries: 2,
  token_budget: 8_000,
};

export interface TurnInput {
  session_id: string;
  turn_id: number;
  text: string;
  user_id?: string;
  policy: TurnPolicy;
  /** Carried over from the session's previous turn. */
  modulators: Modulators;
  stance: Stance;
}

export interface TurnContext extends TurnInput {
  sensors: Sensors | null;
  workspace: Workspace;
  episodes: Episode[];
  waves: string[][];
  wave: number;
  /** Agents of the current wave that have neither replied nor failed yet. */
  wave_pending: string[];
  wave_failures: number;
  /** A wave has started and not yet recorded WAVE_COMPLETED. */
  wave_open: boolean;
  wave_stance: Stance;
  round: number;
  consensus: number;
  decision: CouncilDecision | null;
  response: string;
  /** Which rendering of the reply this is (the evaluator loop re-renders). */
  attempt: number;
  /** Critic feedback for the next rendering. */
  feedback: string[];
  /** Chunks sent so far on each open stream. */
  stream_chunks: Partial<Record<StreamId, number>>;
  /** Streams started and not yet ended: a cut-short rendering still ends them. */
  open_streams: StreamId[];
  /** A request interceptor refused the turn. */
  blocked: boolean;
  /** The stage the turn is in, for warnings raised outside any one stage (an interrupt). */
  stage: Stage;
  critics: CriticResult[];
  /** Tokens used, per actor ("agent:<id>", "council", "voice", "critic:<name>"). */
  usage: Record<string, Usage>;
  warnings: TurnWarning[];
}

export interface TurnOutput {
  session_id: string;
  turn_id: number;
  response: string;
  outcome: TurnOutcome;
  modulators: Modulators;
  stance: Stance;
}

/** What a turn asks its host to append to the event log (the host adds the clock-derived fields). */
export type TurnRecord =
  | Exclude<EventBody, { kind: "TURN_COMPLETED" }>
  | {
      kind: "TURN_COMPLETED";
      payload: Omit<EventPayload<"TURN_COMPLETED">, "total_time_ms">;
    };

type RecordAction = { type: "record"; params: TurnRecord };
type WarnAction = { type: "warn"; params: TurnWarning };

export interface RunWaveInput {
  session_id: string;
  turn_id: number;
  wave: number;
  agents: string[];
  timeout_ms: number;
  attempts: number;
  context: AgentContext;
}

/** Events a wave sends back as its agents answer, then `wave.done` once all have answered or failed. */
export type WaveEvent =
  | { type: "agent.replied"; reply: AgentReply }
  | { type: "agent.failed"; agent_id: string; code: ErrorCode; message: string }
  | { type: "wave.done" };

/** What the voice sends back while it renders (multiplexed streams), then `voice.done`. */
export type VoiceEvent =
  | { type: "voice.start"; stream_id: StreamId; content_type: string }
  | { type: "voice.chunk"; stream_id: StreamId; delta: string }
  | { type: "voice.end"; stream_id: StreamId }
  | { type: "voice.done"; text: string; usage?: Usage }
  | { type: "voice.failed"; code: string; message: string }
  | { type: "voice.intercepted"; stream_id: StreamId; interceptor: string; action: "redact" | "block"; reason: string };

/** Double-texting with `interrupt`: a newer turn stops this one, which completes with a warning. */
export type InterruptEvent = { type: "turn.interrupt"; by_turn_id: number };

export type TurnEvent = WaveEvent | VoiceEvent | InterruptEvent;

export interface DeliberateInput {
  round: number;
  workspace: Workspace;
  /** For asking agents to revise: who, and how long they have. */
  session_id: string;
  turn_id: number;
  timeout_ms: number;
  context: AgentContext;
}
export interface Revision {
  agent_id: string;
  withdrew: string[];
  conceded: string[];
  opposed: string[];
}
export interface DeliberateOutput {
  workspace: Workspace;
  consensus: number;
  revisions: Revision[];
  usage: Record<string, Usage>;
}

/** Raised when a host forgot to provide one of the machine's actors. */
export class MissingActorError extends Error {
  constructor(name: string) {
    super(`turn machine: the host must provide the '${name}' actor with turnMachine.provide()`);
    this.name = "MissingActorError";
  }
}
const unprovided = <O, I>(name: string) =>
  fromPromise<O, I>(async () => {
    throw new MissingActorError(name);
  });

/** The reply to a turn a request interceptor refused. */
export const REFUSAL_REPLY = "I can't help with that request, but I'm glad to help with something else.";

export interface ScreenInput {
  session_id: string;
  turn_id: number;
  text: string;
  sensors: Sensors;
}
export interface ScreenOutput {
  text: string;
  interceptions: { interceptor: string; action: "redact" | "block"; reason: string }[];
  blocked: boolean;
}

/** Said when the safety council itself cannot be reached: the one reply a turn may never lack. */
export const SAFETY_FALLBACK_REPLY =
  "I want to make sure you're safe. If you might act on thoughts of harming yourself or someone else, please contact local emergency services or a crisis line now. I'm here to listen.";

const codeOf = (error: unknown): string => {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" ? code : "internal";
};
const messageOf = (error: unknown): string => (error instanceof Error ? error.message : String(error));

/** The warning for a stage whose invoked actor failed. */
const failed = (stage: Stage, subject?: string) => ({
  type: "warn" as const,
  params: ({ event }: { event: { error?: unknown } }): TurnWarning => ({
    stage,
    code: codeOf(event.error),
    message: messageOf(event.error),
    ...(subject ? { subject } : {}),
  }),
});

/** The warning for a rendering the voice could not finish. */
const voiceFailed = (stage: Stage) => ({
  type: "warn" as const,
  params: ({ event }: { event: TurnEvent }): TurnWarning => ({
    stage,
    code: event.type === "voice.failed" ? event.code : "internal",
    message: event.type === "voice.failed" ? event.message : "voice failed",
    subject: "voice",
  }),
});

/** The warning for a stage that missed its deadline. */
const overran = (stage: Stage, what: string, subject?: string) => ({
  type: "warn" as const,
  params: { stage, code: "timeout", message: `${what} missed the stage deadline`, ...(subject ? { subject } : {}) },
});

/** Adds one call's (or a stage's) usage, per actor, to the turn's. */
const mergeUsage = (total: Record<string, Usage>, more: Record<string, Usage>): Record<string, Usage> => {
  const merged = { ...total };
  for (const [actor, usage] of Object.entries(more)) merged[actor] = addUsage(merged[actor] ?? noUsage(), usage);
  return merged;
};

/** The turn's cost summary for TURN_COMPLETED. */
export const usageSummary = (byActor: Record<string, Usage>): TurnUsage => ({
  ...Object.values(byActor).reduce(addUsage, noUsage()),
  by_actor: byActor,
});

/** What the voice is asked to render now: the council's speech act, and feedback on a re-rendering. */
const voiceRequest = (context: TurnContext): VoiceRequest => ({
  session_id: context.session_id,
  turn_id: context.turn_id,
  user_message: context.text,
  speech_act: context.decision?.speech_act ?? { intent: "respond", key_points: [], do_not: [] },
  thinking: context.decision?.thinking ?? "",
  feedback: context.feedback,
  attempt: context.attempt,
});

const agentContext = (context: TurnContext): AgentContext => ({
  user_message: context.text,
  sensors: context.sensors ?? zeroSensors(),
  modulators: context.workspace.modulators,
  stance: context.workspace.stance,
  claims: context.workspace.claims,
  episodes: context.episodes,
});

export const zeroSensors = (): Sensors => ({
  vulnerability: 0,
  advice_requested: 0,
  relational_bid: 0,
  ai_feelings_probe: 0,
  humor_masking: 0,
  rupture: 0,
  ambiguity: 0,
  safety_risk: 0,
  prompt_injection: 0,
});

export const turnMachine = setup({
  types: {
    context: {} as TurnContext,
    input: {} as TurnInput,
    output: {} as TurnOutput,
    events: {} as TurnEvent,
  },
  actors: {
    senseFast: unprovided<Sensors, { text: string }>("senseFast"),
    screen: unprovided<ScreenOutput, ScreenInput>("screen"),
    safetyCouncil: unprovided<SafetyCouncilReply, SafetyCouncilRequest>("safetyCouncil"),
    retrieveMemory: unprovided<MemoryRetrieveReply, MemoryRetrieveRequest>("retrieveMemory"),
    planWaves: unprovided<PlanWavesReply, PlanWavesRequest>("planWaves"),
    runWave: fromCallback<{ type: "noop" }, RunWaveInput>(() => {
      throw new MissingActorError("runWave");
    }),
    deliberate: unprovided<DeliberateOutput, DeliberateInput>("deliberate"),
    decide: unprovided<CouncilReply, CouncilRequest>("decide"),
    renderVoice: fromCallback<{ type: "noop" }, VoiceRequest>(() => {
      throw new MissingActorError("renderVoice");
    }),
    runCritics: unprovided<CriticsVerdict, CriticRequest>("runCritics"),
    commitMemory: unprovided<MemoryCommitReply, MemoryCommitRequest>("commitMemory"),
  },
  actions: {
    /** Appends one event to the turn's log. Provided by the host; a no-op in a bare machine. */
    record: (_, _event: TurnRecord) => {},
  },
  delays: {
    stageTimeout: ({ context }) => context.policy.stage_timeout_ms,
    /** A wave waits for its slowest agent's every attempt, plus a margin for the reply to travel. */
    waveTimeout: ({ context }) => context.policy.agent_timeout_ms * context.policy.agent_attempts + 250,
  },
  guards: {
    safetyRisk: ({ context }) => (context.sensors?.safety_risk ?? 0) > SAFETY_INTERRUPT_THRESHOLD,
    hasWaves: ({ context }) => context.waves.length > 0,
    hasMoreWaves: ({ context }) => context.wave + 1 < context.waves.length,
    deliberationSettled: ({ context }) =>
      context.consensus >= CONSENSUS_THRESHOLD || context.round + 1 >= context.policy.max_deliberation_rounds,
    councilSpeaks: ({ context }) => context.decision?.speak === true,
    criticsPassed: ({ context }) => context.critics.every((result) => result.passed),
    requestBlocked: ({ context }) => context.blocked,
    mayRetryVoice: ({ context }) => context.attempt <= context.policy.max_voice_retries,
  },
})
  .extend({
    actions: {
      /** Notes a stage's shortfall in the outcome and in the log. */
      warn: enqueueActions<TurnContext, TurnEvent, TurnWarning, TurnEvent, never, RecordAction, never>(
        ({ enqueue }, warning) => {
          enqueue.assign(({ context }) => ({
            warnings: [...context.warnings, warning],
          }));
          enqueue({
            type: "record",
            params: { kind: "STAGE_WARNING", payload: warning },
          });
        },
      ),
      /** Ends a wave in the log: the workspace patch, the stance change if any, then WAVE_COMPLETED. */
      closeWave: enqueueActions<TurnContext, TurnEvent, undefined, TurnEvent, never, RecordAction, never>(
        ({ context, enqueue }) => {
          if (!context.wave_open) return;
          enqueue.assign({ wave_open: false });
          const agents = context.waves[context.wave] ?? [];
          const failed = context.wave_failures + context.wave_pending.length;
          enqueue({
            type: "record",
            params: {
              kind: "WORKSPACE_PATCHED",
              payload: {
                patch: {
                  wave: context.wave,
                  agents_completed: agents.length - failed,
                  claims: context.workspace.claims.length,
                },
              },
            },
          });
          const delta = stanceDifference(context.wave_stance, context.workspace.stance);
          if (Object.keys(delta).length > 0) {
            enqueue({
              type: "record",
              params: {
                kind: "STANCE_UPDATED",
                payload: {
                  delta,
                  current: context.workspace.stance,
                  modulators: context.workspace.modulators,
                },
              },
            });
          }
          enqueue({
            type: "record",
            params: {
              kind: "WAVE_COMPLETED",
              payload: {
                wave: context.wave,
                results: agents.length - failed,
                failed,
              },
            },
          });
        },
      ),
      /** The one reply a safety interrupt may never lack, when the safety council cannot give one. */
      answerSafely: enqueueActions<TurnContext, TurnEvent, undefined, TurnEvent, never, RecordAction, never>(
        ({ enqueue }) => {
          enqueue.assign({ response: SAFETY_FALLBACK_REPLY });
          enqueue({
            type: "record",
            params: { kind: "VOICE_RENDERED", payload: { text: SAFETY_FALLBACK_REPLY, attempt: 1 } },
          });
        },
      ),
      recordInterceptions: enqueueActions<
        TurnContext,
        TurnEvent,
        ScreenOutput["interceptions"],
        TurnEvent,
        never,
        RecordAction,
        never
      >(({ enqueue }, interceptions) => {
        for (const interception of interceptions)
          enqueue({ type: "record", params: { kind: "REQUEST_INTERCEPTED", payload: interception } });
      }),
      /** Enters a pipeline stage: notes it, and records TURN_STAGE_CHANGED. */
      enterStage: enqueueActions<TurnContext, TurnEvent, { stage: Stage }, TurnEvent, never, RecordAction, never>(
        ({ enqueue }, { stage }) => {
          enqueue.assign({ stage });
          enqueue({ type: "record", params: { kind: "TURN_STAGE_CHANGED", payload: { stage } } });
        },
      ),
      /** A stream of the voice opens: STREAM_START before any of its chunks. */
      openStream: enqueueActions<TurnContext, TurnEvent, undefined, TurnEvent, never, RecordAction, never>(
        ({ context, event, enqueue }) => {
          if (event.type !== "voice.start") return;
          enqueue.assign({
            stream_chunks: { ...context.stream_chunks, [event.stream_id]: 0 },
            open_streams: [...context.open_streams, event.stream_id],
          });
          enqueue({
            type: "record",
            params: {
              kind: "STREAM_START",
              payload: { stream_id: event.stream_id, content_type: event.content_type, attempt: context.attempt },
            },
          });
        },
      ),
      streamChunk: enqueueActions<TurnContext, TurnEvent, undefined, TurnEvent, never, RecordAction, never>(
        ({ context, event, enqueue }) => {
          if (event.type !== "voice.chunk") return;
          const index = context.stream_chunks[event.stream_id] ?? 0;
          enqueue.assign({ stream_chunks: { ...context.stream_chunks, [event.stream_id]: index + 1 } });
          enqueue({
            type: "record",
            params: { kind: "STREAM_CHUNK", payload: { stream_id: event.stream_id, index, delta: event.delta } },
          });
        },
      ),
      closeStream: enqueueActions<TurnContext, TurnEvent, undefined, TurnEvent, never, RecordAction, never>(
        ({ context, event, enqueue }) => {
          if (event.type !== "voice.end") return;
          enqueue.assign({ open_streams: context.open_streams.filter((id) => id !== event.stream_id) });
          enqueue({
            type: "record",
            params: {
              kind: "STREAM_END",
              payload: { stream_id: event.stream_id, chunks: context.stream_chunks[event.stream_id] ?? 0 },
            },
          });
        },
      ),
      /** A rendering cut short (deadline, failure, interrupt): every stream it opened still gets its STREAM_END. */
      closeOpenStreams: enqueueActions<TurnContext, TurnEvent, undefined, TurnEvent, never, RecordAction, never>(
        ({ context, enqueue }) => {
          for (const streamId of context.open_streams) {
            enqueue({
              type: "record",
              params: {
                kind: "STREAM_END",
                payload: { stream_id: streamId, chunks: context.stream_chunks[streamId] ?? 0 },
              },
            });
          }
          enqueue.assign({ open_streams: [] });
        },
      ),
      /** The agents stage ends mid-wave (its deadline, an interrupt): pending agents fail and the wave is closed. */
      abandonWave: enqueueActions<
        TurnContext,
        TurnEvent,
        { code: "timeout" | "interrupted"; reason: string },
        TurnEvent,
        never,
        RecordAction | { type: "closeWave"; params: undefined },
        never
      >(({ context, enqueue }, { code, reason }) => {
        if (!context.wave_open) return;
        for (const agentId of context.wave_pending) {
          enqueue({
            type: "record",
            params: { kind: "AGENT_FAILED", payload: { wave: context.wave, agent_id: agentId, code, message: reason } },
          });
        }
        enqueue({ type: "closeWave", params: undefined });
      }),
      recordResponseInterception: enqueueActions<
        TurnContext,
        TurnEvent,
        undefined,
        TurnEvent,
        never,
        RecordAction,
        never
      >(({ event, enqueue }) => {
        if (event.type !== "voice.intercepted") return;
        const { interceptor, action, reason, stream_id } = event;
        enqueue({
          type: "record",
          params: { kind: "RESPONSE_INTERCEPTED", payload: { interceptor, action, reason, stream_id } },
        });
      }),
      /** The voice finished: the reply is its whole text. */
      acceptRendering: enqueueActions<TurnContext, TurnEvent, undefined, TurnEvent, never, RecordAction, never>(
        ({ context, event, enqueue }) => {
          if (event.type !== "voice.done") return;
          enqueue.assign({
            response: event.text,
            usage: mergeUsage(context.usage, event.usage ? { voice: event.usage } : {}),
          });
          enqueue({
            type: "record",
            params: { kind: "VOICE_RENDERED", payload: { text: event.text, attempt: context.attempt } },
          });
        },
      ),
      /** Critics that could not judge at all (absent, crashed) are warnings, not verdicts. */
      criticsUnreachable: enqueueActions<
        TurnContext,
        TurnEvent,
        CriticsVerdict["failures"],
        TurnEvent,
        never,
        WarnAction,
        never
      >(({ enqueue }, failures) => {
        for (const failure of failures) {
          enqueue({
            type: "warn",
            params: {
              stage: "critics",
              code: failure.code,
              message: failure.message,
              subject: `critic:${failure.critic}`,
            },
          });
        }
      }),
      /** The retries are spent and a critic still objects: keep the reply, record why. */
      criticsOverruled: enqueueActions<TurnContext, TurnEvent, undefined, TurnEvent, never, WarnAction, never>(
        ({ context, enqueue }) => {
          for (const result of context.critics.filter((critic) => !critic.passed)) {
            enqueue({
              type: "warn",
              params: {
                stage: "critics",
                code: "critic_failed",
                message: `${result.critic} still failed after ${context.attempt} rendering(s): ${result.feedback}`,
                subject: `critic:${result.critic}`,
              },
            });
          }
        },
      ),
      /** The wave's deadline passed: every agent still pending counts as timed out. */
      waveOverran: enqueueActions<
        TurnContext,
        TurnEvent,
        undefined,
        TurnEvent,
        never,
        RecordAction | WarnAction,
        never
      >(({ context, enqueue }) => {
        for (const agentId of context.wave_pending) {
          const message = `agent ${agentId} did not answer within ${context.policy.agent_timeout_ms} ms`;
          enqueue({
            type: "record",
            params: {
              kind: "AGENT_FAILED",
              payload: {
                wave: context.wave,
                agent_id: agentId,
                code: "timeout",
                message,
              },
            },
          });
          enqueue({
            type: "warn",
            params: {
              stage: "agents",
              code: "timeout",
              message,
              subject: agentId,
            },
          });
        }
      }),
    },
  })
  .createMachine({
    id: "turn",
    context: ({ input }) => ({
      ...input,
      sensors: null,
      workspace: {
        claims: [],
        stance: input.stance,
        modulators: input.modulators,
        proposals: [],
      },
      episodes: [],
      waves: [],
      wave: 0,
      wave_pending: [],
      wave_failures: 0,
      wave_stance: input.stance,
      round: 0,
      consensus: 1,
      decision: null,
      response: "",
      attempt: 1,
      feedback: [],
      stream_chunks: {},
      open_streams: [],
      wave_open: false,
      stage: "ingest",
      blocked: false,
      critics: [],
      usage: {},
      warnings: [],
    }),
    initial: "ingest",
    on: {
      "turn.interrupt": {
        target: ".completed",
        actions: [
          {
            type: "abandonWave",
            params: ({ event }) => ({
              code: "interrupted" as const,
              reason: `interrupted by turn ${event.by_turn_id}`,
            }),
          },
          "closeOpenStreams",
          {
            type: "warn",
            params: ({ context, event }) => ({
              stage: context.stage,
              code: "interrupted",
              message: `interrupted by turn ${event.by_turn_id}`,
            }),
          },
        ],
      },
    },
    states: {
      ingest: {
        entry: [
          {
            type: "record",
            params: ({ context }) => ({
              kind: "TURN_STARTED",
              payload: {
                user_input: context.text,
                turn_id: context.turn_id,
                ...(context.user_id ? { user_id: context.user_id } : {}),
              },
            }),
          },
          { type: "enterStage", params: { stage: "ingest" } },
        ],
        always: "sensing_fast",
      },

      sensing_fast: {
        entry: { type: "enterStage", params: { stage: "sensing_fast" } },
        invoke: {
          src: "senseFast",
          input: ({ context }) => ({ text: context.text }),
          onDone: {
            target: "sensed",
            actions: [
              assign(({ context, event }) => ({
                sensors: event.output,
                workspace: {
                  ...context.workspace,
                  modulators: modulatorsFromSensors(event.output, context.workspace.modulators),
                },
              })),
              {
                type: "record",
                params: ({ event }) => ({
                  kind: "SENSORS_FAST_UPDATED",
                  payload: { sensors: event.output },
                }),
              },
            ],
          },
          onError: {
            target: "context",
            actions: failed("sensing_fast"),
          },
        },
        after: {
          stageTimeout: {
            target: "context",
            actions: overran("sensing_fast", "fast sensors"),
          },
        },
      },

      /** Safety early exit: a high safety_risk skips the cognitive stages for the safety council. */
      sensed: {
        always: [{ guard: "safetyRisk", target: "safety" }, { target: "screening" }],
      },

      /** The request interceptors see the message and the sensors' scores: they may redact it or refuse the turn. */
      screening: {
        invoke: {
          src: "screen",
          input: ({ context }) => ({
            session_id: context.session_id,
            turn_id: context.turn_id,
            text: context.text,
            sensors: context.sensors ?? zeroSensors(),
          }),
          onDone: {
            target: "screened",
            actions: [
              assign({ text: ({ event }) => event.output.text, blocked: ({ event }) => event.output.blocked }),
              { type: "recordInterceptions", params: ({ event }) => event.output.interceptions },
            ],
          },
          onError: { target: "context", actions: failed("sensing_fast", "interceptors") },
        },
        after: { stageTimeout: { target: "context", actions: overran("sensing_fast", "request interceptors") } },
      },

      screened: {
        always: [
          {
            guard: "requestBlocked",
            target: "completed",
            actions: [
              assign({ response: REFUSAL_REPLY }),
              { type: "record", params: { kind: "VOICE_RENDERED", payload: { text: REFUSAL_REPLY, attempt: 1 } } },
            ],
          },
          { target: "context" },
        ],
      },

      safety: {
        entry: [
          // Not a pipeline stage (no TURN_STAGE_CHANGED, as in the seed), but warnings raised here say "safety".
          assign({ stage: "safety" as const }),
          {
            type: "record",
            params: ({ context }) => ({
              kind: "SAFETY_INTERRUPT",
              payload: {
                reason: "high_safety_risk",
                sensor: "safety_risk",
                value: context.sensors?.safety_risk ?? 0,
              },
            }),
          },
        ],
        invoke: {
          src: "safetyCouncil",
          input: ({ context }) => ({
            session_id: context.session_id,
            turn_id: context.turn_id,
            user_message: context.text,
            reason: "high_safety_risk",
          }),
          onDone: {
            target: "completed",
            actions: [
              assign({
                decision: ({ event }) => event.output.decision,
                response: ({ event }) => event.output.text,
              }),
              {
                type: "record",
                params: ({ event }) => ({
                  kind: "COUNCIL_DECISION_MADE",
                  payload: decisionPayload(event.output.decision),
                }),
              },
              {
                type: "record",
                params: ({ event }) => ({
                  kind: "VOICE_RENDERED",
                  payload: { text: event.output.text, attempt: 1 },
                }),
              },
            ],
          },
          onError: {
            target: "completed",
            actions: [failed("safety"), "answerSafely"],
          },
        },
        after: {
          stageTimeout: {
            target: "completed",
            actions: [overran("safety", "safety council"), "answerSafely"],
          },
        },
      },

      context: {
        entry: { type: "enterStage", params: { stage: "context" } },
        invoke: {
          src: "retrieveMemory",
          input: ({ context }) => ({
            session_id: context.session_id,
            turn_id: context.turn_id,
            user_message: context.text,
            limit: 3,
          }),
          onDone: {
            target: "agents",
            actions: [
              assign({ episodes: ({ event }) => event.output.episodes }),
              {
                type: "record",
                params: ({ event }) => ({
                  kind: "MEMORY_RETRIEVED",
                  payload: event.output,
                }),
              },
              {
                type: "record",
                params: ({ event }) => ({
                  kind: "WORKSPACE_PATCHED",
                  payload: {
                    patch: {
                      retrieved_episodes_count: event.output.episodes.length,
                      user_facts_count: event.output.user_facts.length,
                      open_threads_count: event.output.open_threads.length,
                    },
                  },
                }),
              },
            ],
          },
          onError: {
            target: "agents",
            actions: failed("context", "memory"),
          },
        },
        after: {
          stageTimeout: {
            target: "agents",
            actions: overran("context", "memory retrieval", "memory"),
          },
        },
      },

      agents: {
        entry: { type: "enterStage", params: { stage: "agents" } },
        initial: "planning",
        states: {
          planning: {
            invoke: {
              src: "planWaves",
              input: ({ context }) => ({
                session_id: context.session_id,
                turn_id: context.turn_id,
                sensors: context.sensors ?? zeroSensors(),
                modulators: context.workspace.modulators,
                token_budget: context.policy.token_budget,
              }),
              onDone: {
                target: "planned",
                actions: [
                  assign({
                    waves: ({ event }) => event.output.waves.filter((wave) => wave.length > 0),
                    wave: 0,
                  }),
                  { type: "record", params: ({ event }) => ({ kind: "SCHEDULE_PLANNED", payload: event.output }) },
                ],
              },
              onError: {
                target: "done",
                actions: failed("agents", "scheduler"),
              },
            },
          },
          planned: {
            always: [{ guard: "hasWaves", target: "wave" }, { target: "done" }],
          },
          wave: {
            entry: [
              assign(({ context }) => ({
                wave_pending: context.waves[context.wave] ?? [],
                wave_open: true,
                wave_failures: 0,
                wave_stance: context.workspace.stance,
              })),
              {
                type: "record",
                params: ({ context }) => ({
                  kind: "WAVE_STARTED",
                  payload: {
                    wave: context.wave,
                    agent_count: context.waves[context.wave]?.length ?? 0,
                    agents: context.waves[context.wave] ?? [],
                  },
                }),
              },
            ],
            invoke: {
              src: "runWave",
              input: ({ context }) => ({
                session_id: context.session_id,
                turn_id: context.turn_id,
                wave: context.wave,
                agents: context.waves[context.wave] ?? [],
                timeout_ms: context.policy.agent_timeout_ms,
                attempts: context.policy.agent_attempts,
                context: agentContext(context),
              }),
              onError: {
                target: "done",
                actions: [failed("agents"), "closeWave"],
              },
            },
            on: {
              "agent.replied": {
                actions: [
                  assign(({ context, event }) => ({
                    workspace: applyAgentOutput(context.workspace, event.reply.agent_id, event.reply.output),
                    wave_pending: context.wave_pending.filter((id) => id !== event.reply.agent_id),
                    usage: mergeUsage(
                      context.usage,
                      event.reply.usage ? { [`agent:${event.reply.agent_id}`]: event.reply.usage } : {},
                    ),
                  })),
                  {
                    type: "record",
                    params: ({ context, event }) => ({
                      kind: "AGENT_COMPLETED",
                      payload: {
                        wave: context.wave,
                        agent_id: event.reply.agent_id,
                        output: event.reply.output,
                        elapsed_ms: event.reply.elapsed_ms,
                        worker: event.reply.worker,
                      },
                    }),
                  },
                ],
              },
              "agent.failed": {
                actions: [
                  assign(({ context, event }) => ({
                    wave_failures: context.wave_failures + 1,
                    wave_pending: context.wave_pending.filter((id) => id !== event.agent_id),
                  })),
                  {
                    type: "record",
                    params: ({ context, event }) => ({
                      kind: "AGENT_FAILED",
                      payload: {
                        wave: context.wave,
                        agent_id: event.agent_id,
                        code: event.code,
                        message: event.message,
                      },
                    }),
                  },
                  {
                    type: "warn",
                    params: ({ event }) => ({
                      stage: "agents",
                      code: event.code,
                      message: event.message,
                      subject: event.agent_id,
                    }),
                  },
                ],
              },
              "wave.done": [
                {
                  guard: "hasMoreWaves",
                  target: "wave",
                  reenter: true,
                  actions: ["closeWave", assign({ wave: ({ context }) => context.wave + 1 })],
                },
                { target: "done", actions: "closeWave" },
              ],
            },
            after: {
              waveTimeout: [
                {
                  guard: "hasMoreWaves",
                  target: "wave",
                  reenter: true,
                  actions: ["waveOverran", "closeWave", assign({ wave: ({ context }) => context.wave + 1 })],
                },
                { target: "done", actions: ["waveOverran", "closeWave"] },
              ],
            },
          },
          done: { type: "final" },
        },
        onDone: "deliberation",
        after: {
          stageTimeout: {
            target: "deliberation",
            actions: [
              {
                type: "abandonWave",
                params: { code: "timeout" as const, reason: "the agents stage missed its deadline" },
              },
              overran("agents", "agent waves"),
            ],
          },
        },
      },

      deliberation: {
        entry: { type: "enterStage", params: { stage: "deliberation" } },
        initial: "round",
        states: {
          round: {
            entry: {
              type: "record",
              params: ({ context }) => ({ kind: "DELIB_ROUND_STARTED", payload: { round: context.round } }),
            },
            invoke: {
              src: "deliberate",
              input: ({ context }) => ({
                round: context.round,
                workspace: context.workspace,
                session_id: context.session_id,
                turn_id: context.turn_id,
                timeout_ms: context.policy.agent_timeout_ms,
                context: agentContext(context),
              }),
              onDone: {
                target: "settling",
                actions: [
                  assign(({ context, event }) => ({
                    workspace: event.output.workspace,
                    consensus: event.output.consensus,
                    usage: mergeUsage(context.usage, event.output.usage),
                  })),
                  {
                    type: "record",
                    params: ({ context }) => ({
                      kind: "CONSENSUS_UPDATED",
                      payload: { round: context.round, level: context.consensus, claims: context.workspace.claims },
                    }),
                  },
                  {
                    type: "record",
                    params: ({ context, event }) => ({
                      kind: "DELIB_ROUND_COMPLETED",
                      payload: {
                        round: context.round,
                        consensus: context.consensus,
                        revisions: event.output.revisions,
                      },
                    }),
                  },
                ],
              },
              onError: { target: "done", actions: failed("deliberation") },
            },
          },
          /** Stop at consensus or after the last round; otherwise deliberate again. */
          settling: {
            always: [
              { guard: "deliberationSettled", target: "done" },
              { target: "round", actions: assign({ round: ({ context }) => context.round + 1 }) },
            ],
          },
          done: { type: "final" },
        },
        onDone: "council",
        after: { stageTimeout: { target: "council", actions: overran("deliberation", "deliberation") } },
      },

      council: {
        entry: { type: "enterStage", params: { stage: "council" } },
        initial: "deciding",
        states: {
          deciding: {
            invoke: {
              src: "decide",
              input: ({ context }) => ({
                session_id: context.session_id,
                turn_id: context.turn_id,
                context: {
                  ...agentContext(context),
                  consensus: context.consensus,
                  proposals: context.workspace.proposals,
                },
              }),
              onDone: {
                target: "decided",
                actions: [
                  assign(({ context, event }) => ({
                    decision: event.output.decision,
                    usage: mergeUsage(context.usage, event.output.usage ? { council: event.output.usage } : {}),
                  })),
                  {
                    type: "record",
                    params: ({ event }) => ({
                      kind: "COUNCIL_DECISION_MADE",
                      payload: decisionPayload(event.output.decision),
                    }),
                  },
                ],
              },
              onError: { target: "done", actions: failed("council", "council") },
            },
          },
          decided: {
            always: [{ guard: "councilSpeaks", target: "speaking" }, { target: "done" }],
          },
          /** The voice streams the reply (and its thinking) as it renders. */
          speaking: {
            invoke: {
              src: "renderVoice",
              input: ({ context }) => voiceRequest(context),
              onError: { target: "done", actions: failed("council", "voice") },
            },
            on: {
              "voice.start": { actions: "openStream" },
              "voice.chunk": { actions: "streamChunk" },
              "voice.end": { actions: "closeStream" },
              "voice.done": { target: "done", actions: "acceptRendering" },
              "voice.intercepted": { actions: "recordResponseInterception" },
              "voice.failed": { target: "done", actions: ["closeOpenStreams", voiceFailed("council")] },
            },
          },
          done: { type: "final" },
        },
        onDone: "critics",
        after: {
          stageTimeout: { target: "critics", actions: ["closeOpenStreams", overran("council", "council and voice")] },
        },
      },

      /**
       * Critics judge the reply. Evaluator-optimizer loop: when one fails, the
       * voice re-renders with the critics' feedback, up to the policy's retries;
       * a reply that still fails is kept and the failure recorded.
       */
      critics: {
        entry: { type: "enterStage", params: { stage: "critics" } },
        initial: "judging",
        states: {
          judging: {
            invoke: {
              src: "runCritics",
              input: ({ context }) => ({
                session_id: context.session_id,
                turn_id: context.turn_id,
                user_message: context.text,
                response: context.response,
                speech_act: context.decision?.speech_act ?? { intent: "none", key_points: [], do_not: [] },
                attempt: context.attempt,
              }),
              onDone: {
                target: "verdict",
                actions: [
                  assign(({ context, event }) => ({
                    critics: event.output.results,
                    usage: mergeUsage(context.usage, event.output.usage),
                  })),
                  {
                    type: "record",
                    params: ({ context, event }) => ({
                      kind: "CRITICS_UPDATED",
                      payload: {
                        results: event.output.results,
                        passed: event.output.results.every((result) => result.passed),
                        attempt: context.attempt,
                      },
                    }),
                  },
                  { type: "criticsUnreachable", params: ({ event }) => event.output.failures },
                ],
              },
              onError: { target: "done", actions: failed("critics", "critics") },
            },
          },
          verdict: {
            always: [
              { guard: "criticsPassed", target: "done" },
              {
                guard: "mayRetryVoice",
                target: "revising",
                actions: assign(({ context }) => ({
                  feedback: context.critics.filter((result) => !result.passed).map((result) => result.feedback),
                  attempt: context.attempt + 1,
                })),
              },
              { target: "done", actions: "criticsOverruled" },
            ],
          },
          /** The voice renders again, with the critics' feedback appended. */
          revising: {
            invoke: {
              src: "renderVoice",
              input: ({ context }) => voiceRequest(context),
              onError: { target: "done", actions: failed("critics", "voice") },
            },
            on: {
              "voice.start": { actions: "openStream" },
              "voice.chunk": { actions: "streamChunk" },
              "voice.end": { actions: "closeStream" },
              "voice.done": { target: "judging", actions: "acceptRendering" },
              "voice.intercepted": { actions: "recordResponseInterception" },
              "voice.failed": { target: "done", actions: ["closeOpenStreams", voiceFailed("critics")] },
            },
          },
          done: { type: "final" },
        },
        onDone: "memory_commit",
        after: {
          stageTimeout: { target: "memory_commit", actions: ["closeOpenStreams", overran("critics", "critics")] },
        },
      },

      memory_commit: {
        entry: { type: "enterStage", params: { stage: "memory_commit" } },
        invoke: {
          src: "commitMemory",
          input: ({ context }) => ({
            episode: {
              session_id: context.session_id,
              turn_id: context.turn_id,
              user_text: context.text,
              response: context.response,
              intent: context.decision?.speech_act.intent ?? "none",
              ts: 0,
            },
          }),
          onDone: {
            target: "completed",
            actions: {
              type: "record",
              params: ({ event }) => ({
                kind: "MEMORY_COMMITTED",
                payload: event.output,
              }),
            },
          },
          onError: {
            target: "completed",
            actions: failed("memory_commit", "memory"),
          },
        },
        after: {
          stageTimeout: {
            target: "completed",
            actions: overran("memory_commit", "memory commit", "memory"),
          },
        },
      },

      completed: {
        type: "final",
        entry: {
          type: "record",
          params: ({ context }) => ({
            kind: "TURN_COMPLETED",
            payload: {
              response: context.response,
              usage: usageSummary(context.usage),
              outcome: turnOutcome(context.warnings),
            },
          }),
        },
      },
    },
    output: ({ context }) => ({
      session_id: context.session_id,
      turn_id: context.turn_id,
      response: context.response,
      outcome: turnOutcome(context.warnings),
      modulators: context.workspace.modulators,
      stance: context.workspace.stance,
    }),
  });

function decisionPayload(decision: CouncilDecision): EventPayload<"COUNCIL_DECISION_MADE"> {
  return {
    speak: decision.speak,
    urgency: decision.urgency,
    intent: decision.speech_act.intent,
    key_points: decision.speech_act.key_points,
    do_not: decision.speech_act.do_not,
    thinking: decision.thinking,
  };
}
