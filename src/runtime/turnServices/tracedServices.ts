/**
 * A turn's stages as spans, on the runner: every TurnServices call of a turn
 * runs in a span named for the turn machine's actor (`conclave.retrieveMemory`,
 * `conclave.decide`, …), the child of the turn's `conclave.turn` span, so the
 * requests it makes to workers (their client spans) hang under it. Agent calls
 * get no span of their own here: each one's request is its `invoke_agent`
 * client span, the child of the turn's span.
 */
import { type Context, context } from "@opentelemetry/api";
import type { Stage } from "../../contracts/turn.ts";
import { CONCLAVE } from "../../telemetry/attributes.ts";
import { inSpan, tracingActive } from "../../telemetry/tracer.ts";
import { turnContext } from "../../telemetry/turnSpans.ts";
import type { TurnInterceptor } from "./turnInterceptor.ts";

interface TurnRef {
  session_id: string;
  turn_id: number;
}

/** The context a turn's work runs in: its turn span's, else the active one (a turn this runner holds no span for). */
const parentOf = (turn: TurnRef): Context => turnContext(turn.session_id, turn.turn_id) ?? context.active();

/** One call of a stage in its span. */
function inStage<T>(actor: string, stage: Stage, turn: TurnRef, run: () => Promise<T>): Promise<T> {
  const attributes = {
    [CONCLAVE.sessionId]: turn.session_id,
    [CONCLAVE.turnId]: turn.turn_id,
    "conclave.stage": stage,
  };
  return inSpan(`conclave.${actor}`, { attributes }, run, parentOf(turn));
}

/**
 * The interceptor putting each stage in a span (see above). Decided once,
 * when the runner builds its sessions: without a tracer provider registered
 * then, there is none (null), and nothing is added to any call.
 */
export function tracingInterceptor(): TurnInterceptor | null {
  if (!tracingActive()) return null;
  return {
    screen: (input, next) => inStage("screen", "ingest", input.request, () => next(input)),
    safetyCouncil: (input, next) => inStage("safetyCouncil", "safety", input.request, () => next(input)),
    retrieveMemory: (input, next) => inStage("retrieveMemory", "context", input.request, () => next(input)),
    planWaves: (input, next) => inStage("planWaves", "agents", input.request, () => next(input)),
    callAgent: (input, next) => context.with(parentOf(input.request), () => next(input)),
    deliberate: (input, next) => inStage("deliberate", "deliberation", input.request, () => next(input)),
    decide: (input, next) => inStage("decide", "council", input.request, () => next(input)),
    renderVoice: (input, next) => inStage("renderVoice", "council", input.request, () => next(input)),
    runCritics: (input, next) => inStage("runCritics", "critics", input.request, () => next(input)),
    commitMemory: (input, next) => inStage("commitMemory", "memory_commit", input.request.episode, () => next(input)),
  };
}
