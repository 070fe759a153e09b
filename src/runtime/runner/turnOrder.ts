import { isConclaveError, messageOf } from "../../errors.ts";
import type { TurnStatusStore } from "../../eventlog/turnStatusStore.ts";
import type { Logger } from "../../telemetry/log.ts";
import type { SessionStore } from "../sessionStore.ts";

/** How long a runner that took a session waits for an earlier turn before it looks again whether that turn can still come. */
export const TURN_ORDER_WAIT_MS = 15_000;

interface Barrier {
  /** Earlier turns of the session, accepted and not finished, that this runner has not been handed yet. */
  awaiting: Set<number>;
  /** When to look again whether the awaited turns can still come. */
  until: number;
  /** The look under way, shared by the deliveries that wait on it. */
  recheck?: Promise<void>;
}

/**
 * Keeps a session's turns in turn order when a runner takes the session over.
 * A runner that dies leaves its turns in the WAL, to be delivered again only
 * after their ack wait; meanwhile later turns (or the same ones, in another
 * order) may reach the runner that takes the session. When a runner first
 * takes a session, it notes the turns accepted after the session's last
 * finished one that are still pending or inflight, and runs no later turn
 * until those have reached it. Every TURN_ORDER_WAIT_MS it looks again: a
 * turn that ended meanwhile (on another runner) or whose WAL entry is gone
 * (it can never come) is waited for no more; one whose entry the WAL still
 * holds is, however long its redelivery takes (a partition healing can take
 * minutes), since running a later turn first would break the session's order.
 */
export class TurnOrder {
  readonly #barriers = new Map<string, Promise<Barrier>>();

  constructor(
    private readonly deps: {
      store: SessionStore;
      statuses: TurnStatusStore;
      log: Logger;
      /** The session's turn ids whose entries the WAL still holds (`walTurnIds`). */
      walTurnIds: (sessionId: string) => Promise<number[]>;
    },
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
    const current = await barrier;
    if (current.awaiting.size > 0 && Date.now() > current.until) {
      current.recheck ??= this.#recheck(sessionId, current).finally(() => {
        current.recheck = undefined;
      });
      await current.recheck;
    }
    return ![...current.awaiting].some((earlier) => earlier < turnId);
  }

  /** The turn reached the session's actor: later turns need not wait for it any more. */
  arrived(sessionId: string, turnId: number): void {
    void this.#barriers.get(sessionId)?.then((barrier) => barrier.awaiting.delete(turnId));
  }

  /** This runner no longer hosts the session: the next time it does, it looks again. */
  forget(sessionId: string): void {
    this.#barriers.delete(sessionId);
  }

  /** Drops the awaited turns that ended or can no longer come; waits on for the others. */
  async #recheck(sessionId: string, barrier: Barrier): Promise<void> {
    const awaited = [...barrier.awaiting];
    try {
      const [statuses, inWal] = await Promise.all([
        Promise.all(awaited.map((id) => this.deps.statuses.get(sessionId, id))),
        this.deps.walTurnIds(sessionId),
      ]);
      const held = new Set(inWal);
      awaited.forEach((id, index) => {
        const status = statuses[index]?.status;
        if (status === "pending" || status === "inflight") {
          if (held.has(id)) return;
          this.deps.log.warn(
            `session ${sessionId}: turn ${id} is accepted but its WAL entry is gone, so it cannot come; later turns go ahead`,
          );
        }
        barrier.awaiting.delete(id);
      });
    } catch (error) {
      // Nothing could be read (NATS unreachable): nothing is known to have changed, so the turns still wait.
      this.deps.log.warn(`session ${sessionId}: could not look at its earlier turns (${messageOf(error)}); waiting on`);
    }
    if (barrier.awaiting.size > 0)
      this.deps.log.info(
        `session ${sessionId}: turn(s) ${[...barrier.awaiting].join(", ")} still in the WAL, not delivered here yet: later turns wait for them`,
      );
    barrier.until = Date.now() + this.waitMs;
  }

  async #survey(sessionId: string): Promise<Barrier> {
    // A damaged record (reported on conclave.dlq.kv) reads as none: a damaged snapshot surveys from turn 1, and a
    // damaged status is nothing to wait for. Any other failure (NATS away) fails the survey, which `mayRun`'s
    // caller hands back and which is made again next time: read as "none", an earlier turn still to come would
    // not be waited for, and a later one would run first.
    const damagedIsNone = (error: unknown) => {
      if (isConclaveError(error, "corrupt_value")) return null;
      throw error;
    };
    const [snapshot, lastAccepted] = await Promise.all([
      this.deps.store.snapshot(sessionId).catch(damagedIsNone),
      this.deps.store.lastTurnId(sessionId),
    ]);
    const from = (snapshot?.last_turn_id ?? 0) + 1;
    const ids = Array.from({ length: Math.max(0, lastAccepted - from + 1) }, (_, index) => from + index);
    const statuses = await Promise.all(ids.map((id) => this.deps.statuses.get(sessionId, id).catch(damagedIsNone)));
    const awaiting = new Set(
      ids.filter((_, index) => statuses[index]?.status === "pending" || statuses[index]?.status === "inflight"),
    );
    return { awaiting, until: Date.now() + this.waitMs };
  }
}
