import type { NatsConnection } from "@nats-io/nats-core";
import { TurnCancelled } from "../contracts/turn.ts";
import { subjects } from "./subjects.ts";
import { decodeMessage } from "./wire.ts";

const keyOf = (sessionId: string, turnId: number) => `${sessionId}\u0000${turnId}`;

/** How long a cancellation is remembered for a turn that has not reached this process yet. */
const REMEMBERED_MS = 10 * 60_000;
/** At most this many are remembered (the oldest go first): a burst of cancellations cannot grow the map for good. */
const MAX_REMEMBERED = 10_000;

/**
 * This process's view of the cancellations broadcast on
 * `conclave.turn.cancelled`: each is handed to `onCancel` as it arrives, and
 * remembered for a while, so a turn that reaches this process after its
 * cancellation (still in the WAL when it was cancelled) is known to be
 * cancelled without a read of its status. One subscription per process.
 */
export class TurnCancellations {
  readonly #recent = new Map<string, { reason: string; at: number }>();
  readonly #watchers = new Map<string, Set<(reason: string) => void>>();
  readonly #close: () => void;

  constructor(nc: NatsConnection, onCancel: (cancelled: TurnCancelled) => void = () => {}) {
    const subscription = nc.subscribe(subjects.turnCancelled, {
      callback: (error, msg) => {
        if (error) return;
        let cancelled: TurnCancelled;
        try {
          cancelled = decodeMessage(msg, TurnCancelled, "turn cancellation");
        } catch {
          return; // not a cancellation: nothing to stop
        }
        this.#remember(cancelled);
        for (const stop of this.#watchers.get(keyOf(cancelled.session_id, cancelled.turn_id)) ?? [])
          stop(cancelled.reason);
        onCancel(cancelled);
      },
    });
    this.#close = () => subscription.unsubscribe();
  }

  #remember({ session_id, turn_id, reason }: TurnCancelled): void {
    const now = Date.now();
    for (const [key, { at }] of this.#recent) {
      if (now - at < REMEMBERED_MS) break; // insertion order: the rest are newer
      this.#recent.delete(key);
    }
    this.#recent.set(keyOf(session_id, turn_id), { reason, at: now });
    if (this.#recent.size > MAX_REMEMBERED) this.#recent.delete(this.#recent.keys().next().value as string);
  }

  /**
   * Calls `stop` if the turn is cancelled while the work it stands for is
   * in progress (at once if it already was). Returns the function that
   * ends the watch, to call when the work is done.
   */
  watch(sessionId: string, turnId: number, stop: (reason: string) => void): () => void {
    const key = keyOf(sessionId, turnId);
    const known = this.#recent.get(key);
    if (known) {
      stop(known.reason);
      return () => {};
    }
    const watchers = this.#watchers.get(key) ?? new Set();
    watchers.add(stop);
    this.#watchers.set(key, watchers);
    return () => {
      watchers.delete(stop);
      if (watchers.size === 0) this.#watchers.delete(key);
    };
  }

  /** Why the turn was cancelled, if a cancellation of it reached this process. */
  reasonFor(sessionId: string, turnId: number): string | undefined {
    return this.#recent.get(keyOf(sessionId, turnId))?.reason;
  }

  /** Stops listening. */
  close(): void {
    this.#close();
  }
}
