import type { NatsConnection } from "@nats-io/nats-core";
import type { TurnWatch } from "../bus/serveActor.ts";
import { subjects } from "../bus/subjects.ts";
import { TurnCancellations } from "../bus/turnCancellations.ts";
import { decodeMessage } from "../bus/wire.ts";
import { TURN_TAKEN_OVER, TurnEnded } from "../contracts/turn.ts";

const keyOf = (sessionId: string, turnId: number) => `${sessionId}\u0000${turnId}`;

/**
 * A worker's registry of the calls open for each turn: every request that
 * names a turn (`session_id`, `turn_id`) registers the stop of its
 * AbortController here while it runs (`serveActor` makes it, merged with the
 * call's own deadline, and hands its signal to the model or tool call). A
 * turn's calls are aborted when it is cancelled (`conclave.turn.cancelled`,
 * remembered: a later call of that turn stops at once) and when a runner says
 * it ended or was taken over (`conclave.turn.ended`, not remembered: only the
 * calls open when it arrives stop). A runner that takes a turn over publishes
 * the end of the attempt before its own requests, on the same connection, so
 * the new attempt's calls, which arrive after it, run; the old attempt's steps
 * (`stepKey`) go on too, since the new attempt joins them rather than asking
 * the model again: the turn's own end stops them. One per worker: it is the
 * worker's `ServeOptions.cancellations`.
 */
export class TurnAborts implements TurnWatch {
  /** Per turn, each open call's stop and whether it is a step. */
  readonly #open = new Map<string, Map<(reason: string) => void, boolean>>();
  readonly #cancellations: TurnCancellations;
  readonly #unsubscribe: () => void;

  constructor(nc: NatsConnection, cancellations = new TurnCancellations(nc)) {
    this.#cancellations = cancellations;
    const subscription = nc.subscribe(subjects.turnEnded, {
      callback: (error, msg) => {
        if (error) return;
        let ended: TurnEnded;
        try {
          ended = decodeMessage(msg, TurnEnded, "turn end");
        } catch {
          return; // not a turn's end: nothing to stop
        }
        const takenOver = ended.reason === TURN_TAKEN_OVER;
        const why = takenOver ? "another runner took it over" : `it ended (${ended.reason})`;
        this.abort(ended.session_id, ended.turn_id, why, { spareSteps: takenOver });
      },
    });
    this.#unsubscribe = () => subscription.unsubscribe();
  }

  /**
   * Registers one call of a turn: `stop` is called when the turn is cancelled
   * (at once if it already was), ends, or (unless it is a step) is taken over.
   * Returns the function that unregisters it, to call when the call is done.
   */
  watch(
    sessionId: string,
    turnId: number,
    stop: (reason: string) => void,
    call: { step: boolean } = { step: false },
  ): () => void {
    const key = keyOf(sessionId, turnId);
    const calls = this.#open.get(key) ?? new Map<(reason: string) => void, boolean>();
    calls.set(stop, call.step);
    this.#open.set(key, calls);
    const unwatchCancellation = this.#cancellations.watch(sessionId, turnId, stop);
    return () => {
      unwatchCancellation();
      calls.delete(stop);
      if (calls.size === 0 && this.#open.get(key) === calls) this.#open.delete(key);
    };
  }

  /** Stops the calls open for the turn now (with `spareSteps`, all but its steps); how many it stopped. */
  abort(sessionId: string, turnId: number, reason: string, options: { spareSteps?: boolean } = {}): number {
    const key = keyOf(sessionId, turnId);
    const calls = this.#open.get(key);
    if (!calls) return 0;
    // The calls open now: one registered while they stop (a new attempt's) is not this end's to stop.
    const stopping = [...calls].filter(([, step]) => !(options.spareSteps && step));
    for (const [stop] of stopping) calls.delete(stop);
    if (calls.size === 0) this.#open.delete(key);
    for (const [stop] of stopping) stop(reason);
    return stopping.length;
  }

  /** How many calls are open for the turn (all turns when none is named). */
  openCalls(sessionId?: string, turnId?: number): number {
    if (sessionId !== undefined && turnId !== undefined) return this.#open.get(keyOf(sessionId, turnId))?.size ?? 0;
    let count = 0;
    for (const calls of this.#open.values()) count += calls.size;
    return count;
  }

  /** Stops listening (calls still open keep their own deadlines). */
  close(): void {
    this.#unsubscribe();
    this.#cancellations.close();
  }
}
