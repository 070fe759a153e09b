/**
 * A turn's stages as spans, on the runner: every TurnServices call of a turn
 * runs in a span named for the turn machine's actor (`conclave.retrieveMemory`,
 * `conclave.decide`, …), the child of the turn's `conclave.turn` span, so the
 * requests it makes to workers (their client spans) hang under it. Agent calls
 * get no span of their own here: each one's request is its `invoke_agent`
 * client span, the child of the turn's span.
 */
import { type Context, context } from "@opentelemetry/api";
import type { Stage } from "../contracts/turn.ts";
import type { TurnServices } from "../runtime/turnServices/turnServices.ts";
import { CONCLAVE } from "./attributes.ts";
import { inSpan, tracingActive } from "./tracer.ts";
import { turnContext } from "./turnSpans.ts";

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
 * `services` with each stage in a span (see above). Decided once, when the
 * runner builds its sessions: without a tracer provider registered then,
 * `services` is returned as it is, and nothing is added to any call.
 */
export function withTracing(services: TurnServices): TurnServices {
  if (!tracingActive()) return services;
  return {
    senseFast: (text) => services.senseFast(text),
    screen: (request) => inStage("screen", "ingest", request, () => services.screen(request)),
    safetyCouncil: (request, signal) =>
      inStage("safetyCouncil", "safety", request, () => services.safetyCouncil(request, signal)),
    retrieveMemory: (request, signal) =>
      inStage("retrieveMemory", "context", request, () => services.retrieveMemory(request, signal)),
    planWaves: (request, signal) => inStage("planWaves", "agents", request, () => services.planWaves(request, signal)),
    callAgent: (request, signal, attempts, onStream) =>
      context.with(parentOf(request), () => services.callAgent(request, signal, attempts, onStream)),
    deliberate: (input, signal) =>
      inStage("deliberate", "deliberation", input, () => services.deliberate(input, signal)),
    decide: (request, signal) => inStage("decide", "council", request, () => services.decide(request, signal)),
    renderVoice: (request, signal, onStream) =>
      inStage("renderVoice", "council", request, () => services.renderVoice(request, signal, onStream)),
    runCritics: (request, signal) =>
      inStage("runCritics", "critics", request, () => services.runCritics(request, signal)),
    commitMemory: (request, signal) =>
      inStage("commitMemory", "memory_commit", request.episode, () => services.commitMemory(request, signal)),
  };
}
