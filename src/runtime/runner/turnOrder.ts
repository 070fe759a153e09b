import type { TurnStatusStore } from "../../eventlog/turnStatusStore.ts";
import type { Logger } from "../../telemetry/log.ts";
import type { SessionStore } from "../sessionStore.ts";

/** How long a runner that took a session keeps later turns waiting for an earlier one to be delivered. */
export const TURN_ORDER_WAIT_MS = 15_000;

interface Barrier {
  /** Earlier turns of the session, accepted and not finished, that this runner has not been handed yet. */
  awaiting: Set<number>;
  until: number;
}

/**
 * Keeps a session's turns in turn order when a runner takes the session over.
 * A runner that dies leaves its turns in the WAL, to be delivered again only
 * after their ack wait; meanwhile later turns (or the same ones, in another
 * order) may reach the runner that takes the session. When a runner first
 * takes a session, it notes the turns accepted after the session's last
 * finished one that are still pending or inflight, and runs no later turn
 * until those have reached it (or TURN_ORDER_WAIT_MS has passed: a turn
 * that never comes must not stop the session for good).
 */
export class TurnOrder {
  readonly #barriers = new Map<string, Promise<Barrier>>();

  constructor(
    private readonly deps: { store: SessionStore; statuses: TurnStatusStore; log: Logger },
    private readonly waitMs = TURN_ORDER_WAIT_MS,
  ) {}

  /** True when `turnId` may run now; false when an earlier turn of the session must reach this runner first. */
  async mayRun(sessionId: string, turnId: number): Promise<boolean> {
    let barrier = this.#barriers.get(sessionId);
    if (!barrier) {
      barrier = this.#survey(sessionId);
      this.#barriers.set(sessionId, barrier);
      barrier.catch(() => this.#barriers.delete(sessionId));
    }
    const { awaiting, until } = await barrier;
    if (awaiting.size === 0) return true;
    if (Date.now() > until) {
      this.deps.log.warn(
        `session ${sessionId}: turn(s) ${[...awaiting].join(", ")} did not arrive within ${this.waitMs} ms; later turns go ahead`,
      );
      awaiting.clear();
      return true;
    }
    return ![...awaiting].some((earlier) => earlier < turnId);
  }

  /** The turn reached the session's actor: later turns need not wait for it any more. */
  arrived(sessionId: string, turnId: number): void {
    void this.#barriers.get(sessionId)?.then((barrier) => barrier.awaiting.delete(turnId));
  }

  /** This runner no longer hosts the session: the next time it does, it looks again. */
  forget(sessionId: string): void {
    this.#barriers.delete(sessionId);
  }

  async #survey(sessionId: string): Promise<Barrier> {
    const [snapshot, lastAccepted] = await Promise.all([
      this.deps.store.snapshot(sessionId).catch(() => null),
      this.deps.store.lastTurnId(sessionId),
    ]);
    const from = (snapshot?.last_turn_id ?? 0) + 1;
    const ids = Array.from({ length: Math.max(0, lastAccepted - from + 1) }, (_, index) => from + index);
    // An unreadable status (reported on conclave.dlq.kv) is nothing to wait for.
    const statuses = await Promise.all(ids.map((id) => this.deps.statuses.get(sessionId, id).catch(() => null)));
    const awaiting = new Set(
      ids.filter((_, index) => statuses[index]?.status === "pending" || statuses[index]?.status === "inflight"),
    );
    return { awaiting, until: Date.now() + this.waitMs };
  }
}
