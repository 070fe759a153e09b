/**
 * The `debug` event level's detail: each call of a turn's services timed on the
 * runner's clock and recorded as STEP_TIMED when it settles, before the event
 * its answer makes. Below the recorded steps, so a step a takeover answers from
 * the log is not timed; above tracing and the workers, so the time is what the
 * turn waited for the call, hops included. At any other level the layer is not
 * there at all: nothing is timed or built.
 */
import type { TurnRecord } from "../../contracts/turnProtocol.ts";
import { monotonicNow } from "../../eventlog/clock.ts";
import type { EventLevel } from "../../eventlog/levels.ts";
import type { TurnInterceptor } from "./turnInterceptor.ts";

type TurnRef = { session_id: string; turn_id: number };
type RecordEvent = (turn: TurnRef, body: TurnRecord) => void;

/** Times `run` and records it on `turn`'s log, answered or failed; the outcome is handed on unchanged. */
async function timed<T>(
  record: RecordEvent,
  turn: TurnRef,
  step: string,
  agentId: string | undefined,
  run: () => Promise<T>,
) {
  const started = monotonicNow();
  const settle = (ok: boolean) =>
    record(turn, {
      kind: "STEP_TIMED",
      payload: {
        step,
        ...(agentId ? { agent_id: agentId } : {}),
        elapsed_ms: Math.round((monotonicNow() - started) * 100) / 100,
        ok,
      },
    });
  try {
    const answer = await run();
    settle(true);
    return answer;
  } catch (error) {
    settle(false);
    throw error;
  }
}

/**
 * The layer recording STEP_TIMED for every call of a turn's services, or null below the `debug` level.
 * The fast sensors' call is not timed: it is given only the text, not the turn it is for.
 */
export function stepTimingsInterceptor(level: EventLevel, record: RecordEvent): TurnInterceptor | null {
  if (level !== "debug") return null;
  return {
    screen: (input, next) => timed(record, input.request, "screen", undefined, () => next(input)),
    retrieveMemory: (input, next) => timed(record, input.request, "retrieveMemory", undefined, () => next(input)),
    planWaves: (input, next) => timed(record, input.request, "planWaves", undefined, () => next(input)),
    callAgent: (input, next) => timed(record, input.request, "callAgent", input.request.agent_id, () => next(input)),
    deliberate: (input, next) => timed(record, input.request, "deliberate", undefined, () => next(input)),
    decide: (input, next) => timed(record, input.request, "decide", undefined, () => next(input)),
    safetyCouncil: (input, next) => timed(record, input.request, "safetyCouncil", undefined, () => next(input)),
    renderVoice: (input, next) => timed(record, input.request, "renderVoice", undefined, () => next(input)),
    runCritics: (input, next) => timed(record, input.request, "runCritics", undefined, () => next(input)),
    commitMemory: (input, next) => timed(record, input.request.episode, "commitMemory", undefined, () => next(input)),
  };
}
