import { enqueueActions } from "xstate";
import { stanceDifference } from "../../src/cognition/workspace.ts";
import type { ReplyFallback } from "../../src/contracts/council.ts";
import type { CriticsVerdict } from "../../src/contracts/critic.ts";
import type { Stage, TurnWarning } from "../../src/contracts/turn.ts";
import type { ScreenOutput, TurnEvent, TurnRecord } from "../../src/contracts/turnProtocol.ts";
import { mergeUsage, SAFETY_FALLBACK_REPLY, type TurnContext } from "./context.ts";

/**
 * The turn's named actions beyond `record` (which the host provides): each
 * enqueues the context changes and the records one step of the pipeline makes.
 */

type RecordAction = { type: "record"; params: TurnRecord };
type WarnAction = { type: "warn"; params: TurnWarning };

export const turnActions = {
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
  /** A stream of the voice, or of an agent, opens: STREAM_START before any of its chunks. */
  openStream: enqueueActions<TurnContext, TurnEvent, undefined, TurnEvent, never, RecordAction, never>(
    ({ context, event, enqueue }) => {
      if (event.type !== "voice.start" && event.type !== "agent.stream.start") return;
      if (context.open_streams.includes(event.stream_id)) return;
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
      if (event.type !== "voice.chunk" && event.type !== "agent.stream.chunk") return;
      if (!context.open_streams.includes(event.stream_id)) return;
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
      if (event.type !== "voice.end" && event.type !== "agent.stream.end") return;
      if (!context.open_streams.includes(event.stream_id)) return;
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
  /** A rendering or wave cut short (deadline, failure, interrupt): every stream it opened still gets its STREAM_END. */
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
    { code: "timeout" | "interrupted" | "cancelled"; reason: string },
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
  recordResponseInterception: enqueueActions<TurnContext, TurnEvent, undefined, TurnEvent, never, RecordAction, never>(
    ({ event, enqueue }) => {
      if (event.type !== "voice.intercepted" && event.type !== "agent.stream.intercepted") return;
      const { interceptor, action, reason, stream_id } = event;
      enqueue({
        type: "record",
        params: { kind: "RESPONSE_INTERCEPTED", payload: { interceptor, action, reason, stream_id } },
      });
    },
  ),
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
        params: {
          kind: "VOICE_RENDERED",
          payload: {
            text: event.text,
            attempt: context.attempt,
            ...(event.usage ? { usage: event.usage } : {}),
            ...(event.fallback ? { fallback: event.fallback } : {}),
          },
        },
      });
    },
  ),
  /** Critics that could not judge at all (absent, crashed) are warnings, not verdicts; each names its fallback, if one judged. */
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
          message: failure.fallback
            ? `${failure.message}; ${failure.fallback} judged the reply in its place`
            : failure.message,
          subject: `critic:${failure.critic}`,
        },
      });
    }
  }),
  /** What the memory commit could not do (a phase that failed): warnings, the reply stands. */
  memoryWarnings: enqueueActions<TurnContext, TurnEvent, readonly TurnWarning[], TurnEvent, never, WarnAction, never>(
    ({ enqueue }, warnings) => {
      for (const warning of warnings) enqueue({ type: "warn", params: warning });
    },
  ),
  /**
   * The deterministic council or voice answered in place of the one asked, which could not (the
   * reply's `fallback` says why): the answer stands, and the outcome names the fallback.
   */
  fellBack: enqueueActions<
    TurnContext,
    TurnEvent,
    { subject: "council" | "voice"; fallback: ReplyFallback | undefined },
    TurnEvent,
    never,
    WarnAction,
    never
  >(({ context, enqueue }, { subject, fallback }) => {
    if (!fallback) return;
    enqueue({
      type: "warn",
      params: {
        stage: context.stage,
        code: `${subject}_fallback`,
        message: `${fallback.code}: ${fallback.message}; the deterministic ${subject} answered in its place`,
        subject,
      },
    });
  }),
  /** The retries are spent and a critic still objects, or none could judge: keep the reply, record why. */
  criticsOverruled: enqueueActions<TurnContext, TurnEvent, undefined, TurnEvent, never, WarnAction, never>(
    ({ context, enqueue }) => {
      if (context.critics.length === 0) {
        enqueue({
          type: "warn",
          params: { stage: "critics", code: "unjudged", message: "no critic judged the reply", subject: "critics" },
        });
      }
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
  waveOverran: enqueueActions<TurnContext, TurnEvent, undefined, TurnEvent, never, RecordAction | WarnAction, never>(
    ({ context, enqueue }) => {
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
    },
  ),
};
