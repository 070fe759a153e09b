import type { NatsConnection } from "@nats-io/nats-core";
import { submitTurn, watchTurn } from "../src/client/turns.ts";
import type { TurnAck } from "../src/contracts/turn.ts";
import { isConclaveError } from "../src/errors.ts";
import type { TurnSample } from "./load.ts";

/** How the runner let a turn in: at once, after waiting for a place, or not said (a runner without admission control). */
export type AdmissionState = "running" | "queued" | "unreported";

export interface AdmittedSample extends TurnSample {
  admission: AdmissionState;
  /** Where it waited when queued (1: next), from the ack or its TURN_QUEUED event. */
  position?: number;
  /** `busy` answers (queues full) before the submission was accepted. */
  busyAnswers: number;
  /** Time spent waiting on their retry-after hints. */
  retryWaitMs: number;
  /** TURN_COMPLETED's outcome status (`Complete`, `PartialSuccess`, …). */
  status: string;
}

/** When a `busy` answer carries no hint (a runner older than the hint). */
const DEFAULT_RETRY_MS = 500;
/** A turn of a queued thousand may wait long: the watch's patience, well past any stage deadline. */
const WATCH_TIMEOUT_MS = 180_000;
const SUBMIT_TIMEOUT_MS = 30_000;

/** The admission an ack reports, if its runner reports one (the field is optional: older runners leave it out). */
function admissionOf(ack: TurnAck): { state: AdmissionState; position?: number } {
  const admission = (ack as { admission?: { state: "running" | "queued"; position?: number } }).admission;
  if (!admission) return { state: "unreported" };
  return admission.position === undefined
    ? { state: admission.state }
    : { state: admission.state, position: admission.position };
}

/**
 * One turn as a well-behaved client sends it under load, through the public
 * client (`submitTurn` + `watchTurn`): a `busy` answer is retried after its
 * `retry_after_ms` hint (counted), and the turn's admission is read from its
 * ack (`admission`) and from a TURN_QUEUED event in its log. Latency runs from
 * the accepted submission to TURN_COMPLETED; the time spent retrying is apart.
 * Gives up retrying at `retryUntil` (performance.now()) by throwing the last `busy`.
 */
export async function admittedTurn(
  nc: NatsConnection,
  sessionId: string,
  text: string,
  retryUntil: number,
): Promise<AdmittedSample> {
  let busyAnswers = 0;
  let retryWaitMs = 0;
  for (;;) {
    const started = performance.now();
    let ack: TurnAck;
    try {
      // Optional fields take their protocol defaults on the runner.
      ack = await submitTurn(nc, sessionId, { text } as Parameters<typeof submitTurn>[2], SUBMIT_TIMEOUT_MS);
    } catch (error) {
      if (!isConclaveError(error, "busy") || performance.now() >= retryUntil) throw error;
      busyAnswers++;
      const hint = (error as { retryAfterMs?: number }).retryAfterMs ?? DEFAULT_RETRY_MS;
      const waitMs = Math.min(hint, Math.max(0, retryUntil - performance.now()));
      await new Promise((resolve) => setTimeout(resolve, waitMs));
      retryWaitMs += waitMs;
      continue;
    }
    let { state, position } = admissionOf(ack);
    let events = 0;
    const completed = await watchTurn(
      nc,
      ack,
      (event) => {
        events++;
        // A turn of a session another runner owns is admitted there: its log says when it waited.
        if (event.kind === "TURN_QUEUED") {
          state = "queued";
          position ??= (event.payload as { position?: number }).position;
        }
      },
      WATCH_TIMEOUT_MS,
    );
    const status = completed.payload.outcome.status;
    return {
      latencyMs: performance.now() - started,
      runtimeMs: completed.payload.total_time_ms,
      events,
      ok: status === "Complete",
      admission: state,
      ...(position !== undefined ? { position } : {}),
      busyAnswers,
      retryWaitMs,
      status,
    };
  }
}
