import { decide } from "../../cognition/council.ts";
import { streamOffline } from "../../cognition/voice.ts";
import type { ReplyFallback, VoiceStreamId } from "../../contracts/council.ts";
import { turnLabel } from "../../contracts/turnKey.ts";
import { deadlineSignal, timedOut, unlessAborted } from "../../deadline.ts";
import { ConclaveError, codeOf, messageOf, singleLine } from "../../errors.ts";
import type { Logger } from "../../telemetry/log.ts";
import type { TurnInterceptor } from "./turnInterceptor.ts";
import type { TurnServices } from "./turnServices.ts";

/** How {@link replyFallbackInterceptor} shares a stage's time between the call asked and its fallback. */
export interface ReplyFallbackOptions {
  /** The turn policy's `stage_timeout_ms`: the council stage (decide, then the voice) and the critics stage each have this long. */
  stageTimeoutMs: number;
  /** Kept back from the end of the stage for the fallback to run. Default: a tenth of the stage, 100 ms to 1 s. */
  reserveMs?: number;
  /** The most of the council stage's time the council may take, leaving the rest to the voice. Default 0.5. */
  councilShare?: number;
  /** Where each fallback is logged (a warning line). */
  log?: Pick<Logger, "warn">;
}

/** Stage starts kept at most (oldest forgotten first): a turn needs its own only while its stage runs. */
const MAX_TRACKED = 4_096;

/** Where a rendering sends its stream parts, as the services type it. */
type OnStream = Parameters<TurnServices["renderVoice"]>[2];

/**
 * The interceptor whose council and voice always answer: when the council or
 * the voice asked (a worker, its model) cannot — an answer its schema
 * rejects, a model or worker fault, no worker, no answer before the share of
 * the stage it is given — the deterministic council and voice (the offline
 * model, src/cognition/) answer in this process, and the reply carries
 * `fallback` (why) so the turn names it in a warning. A call whose stage is
 * left (deadline, cancellation, interrupt) is not answered in its place: its
 * signal has fired and nobody waits for it. A voice cut short mid-stream has
 * its open streams ended, and the deterministic voice starts them again
 * (STREAM_END, then a new STREAM_START of the same stream and attempt):
 * a client shows each STREAM_START's text afresh.
 */
export function replyFallbackInterceptor(options: ReplyFallbackOptions): TurnInterceptor {
  const { stageTimeoutMs } = options;
  const reserveMs = options.reserveMs ?? Math.min(1_000, Math.max(100, stageTimeoutMs / 10));
  const councilShare = options.councilShare ?? 0.5;
  const starts = new Map<string, number>();
  /** Notes that `stage` of a turn starts now (again, for a turn run again), forgetting the oldest past the limit. */
  const started = (session: string, turn: number, stage: "council" | "critics") => {
    const key = `${session}\u0000${turn}\u0000${stage}`;
    starts.delete(key);
    starts.set(key, performance.now());
    if (starts.size > MAX_TRACKED) starts.delete(starts.keys().next().value as string);
  };
  /** Time left before the stage's deadline, less the fallback's reserve; from now when the stage's start is unknown. */
  const budget = (session: string, turn: number, stage: "council" | "critics") => {
    const start = starts.get(`${session}\u0000${turn}\u0000${stage}`) ?? performance.now();
    return start + stageTimeoutMs - reserveMs - performance.now();
  };
  const fellBack = (what: string, turn: { session_id: string; turn_id: number }, fallback: ReplyFallback) =>
    options.log?.warn(
      `${turnLabel(turn.session_id, turn.turn_id)}: the deterministic ${what} answered: ${fallback.code}: ${singleLine(fallback.message)}`,
    );

  return {
    decide: async (input, next) => {
      const { request, signal } = input;
      started(request.session_id, request.turn_id, "council");
      const allowed = budget(request.session_id, request.turn_id, "council") * councilShare;
      const reason = await attempt(signal, allowed, "the council", (bounded) => next({ ...input, signal: bounded }));
      if (!("fallback" in reason)) return reason.value;
      fellBack("council", request, reason.fallback);
      return { decision: decide(request.context), fallback: reason.fallback };
    },
    renderVoice: async (input, next) => {
      const { request, signal, onStream } = input;
      const stage = request.attempt > 1 ? "critics" : "council";
      const open = new Set<VoiceStreamId>();
      let superseded = false;
      const tracked: OnStream = (part) => {
        if (superseded) return; // a late part of the rendering given up on
        if (part.type === "start") open.add(part.stream_id);
        else if (part.type === "end") open.delete(part.stream_id);
        onStream(part);
      };
      const allowed = budget(request.session_id, request.turn_id, stage);
      const reason = await attempt(signal, allowed, "the voice", async (bounded) => {
        const reply = await next({ ...input, signal: bounded, onStream: tracked });
        // An empty reply is no answer: the user would be told nothing.
        if (reply.text.trim() === "") throw new EmptyReplyError();
        return reply;
      });
      if (!("fallback" in reason)) return reason.value;
      superseded = true;
      // What the user saw of the rendering cut short ends; the deterministic voice starts its streams again.
      for (const streamId of open) onStream({ type: "end", stream_id: streamId });
      fellBack("voice", request, reason.fallback);
      return { text: streamOffline(request, onStream), fallback: reason.fallback };
    },
    runCritics: (input, next) => {
      const { request } = input;
      // The critics stage starts with the first rendering's judging: its re-renderings share the stage's time.
      if (request.attempt === 1) started(request.session_id, request.turn_id, "critics");
      return next(input);
    },
  };
}

/** A voice that answered nothing: its output is unusable, as an answer its schema rejects would be. */
class EmptyReplyError extends ConclaveError<"invalid_output"> {
  constructor() {
    super("invalid_output", "the voice answered an empty reply");
  }
}

/**
 * Runs `call` with at most `allowedMs`: its value, or why the fallback must
 * answer. A call whose own stage was left (`signal` fired) rejects as it
 * did: nothing answers in its place.
 */
async function attempt<T>(
  signal: AbortSignal,
  allowedMs: number,
  who: string,
  call: (bounded: AbortSignal) => Promise<T>,
): Promise<{ value: T } | { fallback: ReplyFallback }> {
  if (signal.aborted) throw signal.reason;
  if (allowedMs <= 0) return { fallback: { code: "timeout", message: `no time was left in the stage for ${who}` } };
  const bounded = deadlineSignal(allowedMs, signal);
  try {
    // Whatever the service does when told to stop, the stage stops waiting for it here.
    return { value: await unlessAborted(call(bounded), bounded) };
  } catch (error) {
    if (signal.aborted) throw error;
    if (timedOut(bounded))
      return {
        fallback: { code: "timeout", message: `${who} did not answer within ${Math.round(allowedMs)} ms` },
      };
    return { fallback: { code: codeOf(error) ?? "internal", message: messageOf(error) } };
  }
}

/** A failure's stable code: a ConclaveError's, a code another error carries, else `internal`. */
