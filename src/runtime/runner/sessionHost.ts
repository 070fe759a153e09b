import type { Actor } from "xstate";
import type { sessionMachine } from "../../../machines/session.ts";
import { isConclaveError, messageOf } from "../../errors.ts";
import type { Logger } from "../log.ts";
import type { Checkpoint, SessionSnapshot, SessionStore } from "../sessionStore.ts";

export type SessionActor = Actor<typeof sessionMachine>;

/** Reading a session's stored state: tries, and the first pause between them (doubling). */
const SNAPSHOT_READ_ATTEMPTS = 4;
const SNAPSHOT_RETRY_MS = 100;

/**
 * The session actors living in this runner, one per session it owns: created
 * on a session's first turn here from its stored snapshot, dropped when the
 * runner must forget what it believes about a session (`evict`). A failed
 * read of the stored snapshot is retried, and never remembered: the next
 * turn reads again. Snapshot saves of one session are written in the order
 * its turns finished.
 */
export class SessionHost {
  readonly #actors = new Map<string, SessionActor>();
  readonly #starting = new Map<string, Promise<SessionActor>>();
  readonly #saves = new Map<string, Promise<void>>();

  constructor(
    private readonly create: (sessionId: string, snapshot: SessionSnapshot | null) => SessionActor,
    private readonly store: SessionStore,
    private readonly log: Logger,
  ) {}

  /** The session's live actor, started from its stored snapshot if it has none here yet. */
  get(sessionId: string): Promise<SessionActor> {
    const live = this.#actors.get(sessionId);
    if (live) return Promise.resolve(live);
    let starting = this.#starting.get(sessionId);
    if (!starting) {
      starting = this.#start(sessionId).finally(() => this.#starting.delete(sessionId));
      this.#starting.set(sessionId, starting);
    }
    return starting;
  }

  /** The session's actor if it is live here, without starting one. */
  ifRunning(sessionId: string): SessionActor | undefined {
    return this.#actors.get(sessionId);
  }

  async #start(sessionId: string): Promise<SessionActor> {
    const snapshot = await this.#readSnapshot(sessionId);
    const actor = this.create(sessionId, snapshot);
    actor.start();
    this.#actors.set(sessionId, actor);
    return actor;
  }

  async #readSnapshot(sessionId: string): Promise<SessionSnapshot | null> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.store.snapshot(sessionId);
      } catch (error) {
        // A value that fails its schema fails the same way again; anything else (NATS away) may pass.
        if (attempt >= SNAPSHOT_READ_ATTEMPTS || isConclaveError(error, "corrupt_value")) throw error;
        this.log.warn(`session ${sessionId}: reading its stored state failed (${messageOf(error)}); trying again`);
        await new Promise((resolve) => setTimeout(resolve, SNAPSHOT_RETRY_MS * 2 ** (attempt - 1)));
      }
    }
  }

  /** True when the session's live actor here already finished the turn (an actor restored from storage knows none). */
  finishedHere(sessionId: string, turnId: number): boolean {
    return this.#actors.get(sessionId)?.getSnapshot().context.finished.includes(turnId) ?? false;
  }

  /** Stops and forgets the session's actor: its next turn restores it from the stored snapshot. */
  evict(sessionId: string): void {
    const actor = this.#actors.get(sessionId);
    this.#actors.delete(sessionId);
    actor?.stop();
  }

  /**
   * Saves the session's snapshot (and a replay checkpoint when given) after
   * the saves already under way for the session, so a later turn's state is
   * never overwritten by an earlier one's.
   */
  save(sessionId: string, snapshot: SessionSnapshot, checkpoint?: Checkpoint): Promise<void> {
    const previous = this.#saves.get(sessionId) ?? Promise.resolve();
    const next = previous
      .catch(() => {})
      .then(async () => {
        await Promise.all([
          this.store.saveSnapshot(sessionId, snapshot),
          checkpoint ? this.store.saveCheckpoint(sessionId, checkpoint) : undefined,
        ]);
      });
    this.#saves.set(sessionId, next);
    const forget = () => {
      if (this.#saves.get(sessionId) === next) this.#saves.delete(sessionId);
    };
    next.then(forget, forget);
    return next;
  }

  stopAll(): void {
    for (const actor of this.#actors.values()) actor.stop();
    this.#actors.clear();
  }
}
