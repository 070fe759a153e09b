import type { NatsConnection } from "@nats-io/nats-core";
import { decodeJson } from "../bus/codec.ts";
import { subjects } from "../bus/subjects.ts";
import { TurnCancellations } from "../bus/turnCancellations.ts";
import { TurnEnded } from "../contracts/turn.ts";

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
 * the new attempt's calls, which arrive after it, run. One per worker: it is
 * the worker's `ServeOptions.cancellations`.
 */
export class TurnAborts {
  readonly #open = new Map<string, Set<(reason: string) => void>>();
  readonly #cancellations: TurnCancellations;
  readonly #unsubscribe: () => void;

  constructor(nc: NatsConnection, cancellations = new TurnCancellations(nc)) {
    this.#cancellations = cancellations;
    const subscription = nc.subscribe(subjects.turnEnded, {
      callback: (error, msg) => {
        if (error) return;
        let ended: TurnEnded;
        try {
          ended = decodeJson(msg.data, TurnEnded, "turn end");
        } catch {
          return; // not a turn's end: nothing to stop
        }
        this.abort(ended.session_id, ended.turn_id, `it ended (${ended.reason})`);
      },
    });
    this.#unsubscribe = () => subscription.unsubscribe();
  }

  /**
   * Registers one call of a turn: `stop` is called when the turn is cancelled
   * (at once if it already was), ends, or is taken over. Returns the function
   * that unregisters it, to call when the call is done.
   */
  watch(sessionId: string, turnId: number, stop: (reason: string) => void): () => void {
    const key = keyOf(sessionId, turnId);
    const calls = this.#open.get(key) ?? new Set();
    calls.add(stop);
    this.#open.set(key, calls);
    const unwatchCancellation = this.#cancellations.watch(sessionId, turnId, stop);
    return () => {
      unwatchCancellation();
      calls.delete(stop);
      if (calls.size === 0 && this.#open.get(key) === calls) this.#open.delete(key);
    };
  }

  /** Stops every call open for the turn now (each unregisters as it ends); how many there were. */
  abort(sessionId: string, turnId: number, reason: string): number {
    const key = keyOf(sessionId, turnId);
    const calls = this.#open.get(key);
    if (!calls) return 0;
    // Taken out first: a call of a new attempt registered meanwhile is not this end's to stop.
    this.#open.delete(key);
    for (const stop of calls) stop(reason);
    return calls.size;
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
