import type { Actor } from "xstate";
import type { sessionMachine } from "../../../machines/session.ts";
import { setting } from "../../config/load.ts";
import { CONFIG_SCHEMA } from "../../config/schema.ts";
import { backoffMs, pause } from "../../deadline.ts";
import { isConclaveError, messageOf } from "../../errors.ts";
import type { Logger } from "../../telemetry/log.ts";
import type { Checkpoint, SessionSnapshot, SessionStore } from "../sessionStore.ts";

export type SessionActor = Actor<typeof sessionMachine>;

/** Reading a session's stored state: tries, and the first pause between them (doubling). */
const SNAPSHOT_READ_ATTEMPTS = 4;
const SNAPSHOT_RETRY_MS = 100;

/** How long a session stays in a runner's memory without a turn, by default: 10 minutes. */
export const DEFAULT_IDLE_SESSION_TTL_MS = CONFIG_SCHEMA.CONCLAVE_IDLE_SESSION_TTL_MS.default;

/**
 * How long an idle session stays in memory: `given`, else `CONCLAVE_IDLE_SESSION_TTL_MS`, else
 * DEFAULT_IDLE_SESSION_TTL_MS. A given value that is not a positive integer throws a RangeError; a
 * bad variable, a "config" ConclaveError naming it.
 */
export function idleSessionTtlMs(given?: number, env = process.env): number {
  if (given === undefined) return setting(env, "CONCLAVE_IDLE_SESSION_TTL_MS");
  if (!Number.isInteger(given) || given < 1)
    throw new RangeError("idleSessionTtlMs must be a positive integer (milliseconds)");
  return given;
}

/** How the host lets idle sessions go. */
export interface SessionHostOptions {
  /** A session with no turn for this long leaves memory. Default: `idleSessionTtlMs()`. */
  idleMs?: number;
  /** True while the runner has work for the session its actor does not show (a delivery being handled, an entry held). */
  busy?: (sessionId: string) => boolean;
  /** Told once an idle session left memory: the runner lets go of what else it keeps for it. */
  onEvicted?: (sessionId: string) => void;
}

/** A live session actor, and when a turn last used it (`performance.now()`). */
interface Hosted {
  actor: SessionActor;
  usedAt: number;
}

/**
 * The session actors living in this runner, one per session it owns: created
 * on a session's first turn here from its stored snapshot, dropped when the
 * runner must forget what it believes about a session (`evict`). A failed
 * read of the stored snapshot is retried, and never remembered: the next
 * turn reads again. Snapshot saves of one session are written in the order
 * its turns finished.
 *
 * A session with no turn for `idleMs` leaves memory (one sweep timer for all
 * sessions, running only while some are hosted), once its snapshot saves
 * are done and it has no turn running, queued or held: its next turn
 * restores it from the snapshot, as a takeover would.
 */
export class SessionHost {
  readonly #actors = new Map<string, Hosted>();
  readonly #starting = new Map<string, Promise<SessionActor>>();
  readonly #saves = new Map<string, Promise<void>>();
  readonly #idleMs: number;
  #sweep: NodeJS.Timeout | undefined;

  constructor(
    private readonly create: (sessionId: string, snapshot: SessionSnapshot | null) => SessionActor,
    private readonly store: SessionStore,
    private readonly log: Logger,
    private readonly options: SessionHostOptions = {},
  ) {
    this.#idleMs = idleSessionTtlMs(options.idleMs);
  }

  /** The session's live actor, started from its stored snapshot if it has none here yet. */
  get(sessionId: string): Promise<SessionActor> {
    const live = this.#actors.get(sessionId);
    if (live) {
      live.usedAt = performance.now();
      return Promise.resolve(live.actor);
    }
    let starting = this.#starting.get(sessionId);
    if (!starting) {
      starting = this.#start(sessionId).finally(() => this.#starting.delete(sessionId));
      this.#starting.set(sessionId, starting);
    }
    return starting;
  }

  /** The session's actor if it is live here, without starting one. */
  ifRunning(sessionId: string): SessionActor | undefined {
    return this.#actors.get(sessionId)?.actor;
  }

  /** The sessions live here. */
  live(): string[] {
    return [...this.#actors.keys()];
  }

  /** How many sessions are live here. */
  get size(): number {
    return this.#actors.size;
  }

  async #start(sessionId: string): Promise<SessionActor> {
    const snapshot = await this.#readSnapshot(sessionId);
    const actor = this.create(sessionId, snapshot);
    actor.start();
    this.#actors.set(sessionId, { actor, usedAt: performance.now() });
    this.#sweepSoon();
    return actor;
  }

  #sweepSoon(): void {
    if (this.#sweep) return;
    // Sessions leave between idleMs and 1.2 × idleMs after their last turn (at most 30 s late).
    const every = Math.min(Math.max(this.#idleMs / 5, 50), 30_000);
    this.#sweep = setInterval(() => this.sweep(), every);
    this.#sweep.unref();
  }

  /** Evicts the sessions idle for `idleMs` or more; returns them. Run by the host's sweep timer. */
  sweep(): string[] {
    const now = performance.now();
    const evicted: string[] = [];
    for (const [sessionId, hosted] of this.#actors) {
      if (now - hosted.usedAt < this.#idleMs || this.whyBusy(sessionId) !== undefined) continue;
      this.evict(sessionId);
      evicted.push(sessionId);
      this.options.onEvicted?.(sessionId);
    }
    if (evicted.length > 0) this.log.debug(`${evicted.length} idle session(s) left memory`);
    return evicted;
  }

  async #readSnapshot(sessionId: string): Promise<SessionSnapshot | null> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.store.loadSnapshot(sessionId);
      } catch (error) {
        // A value that fails its schema fails the same way again; anything else (NATS away) may pass.
        if (attempt >= SNAPSHOT_READ_ATTEMPTS || isConclaveError(error, "corrupt_value")) throw error;
        this.log.warn(`session ${sessionId}: reading its stored state failed (${messageOf(error)}); trying again`);
        await pause(backoffMs(attempt - 1, { baseMs: SNAPSHOT_RETRY_MS }));
      }
    }
  }

  /** True when the session's live actor here already finished the turn (an actor restored from storage knows none). */
  finishedHere(sessionId: string, turnId: number): boolean {
    return this.#actors.get(sessionId)?.actor.getSnapshot().context.finished.includes(turnId) ?? false;
  }

  /**
   * Evicts the session now if nothing of it is under way here (as the idle sweep would, without waiting
   * for it to have been idle a while); true when it is not live here (any more). A partition that moved
   * hands its sessions over this way.
   */
  evictIfIdle(sessionId: string): boolean {
    if (this.whyBusy(sessionId) !== undefined) return false;
    this.evict(sessionId);
    return true;
  }

  /**
   * What keeps the session here: a snapshot save, a restore, a delivery under way or held, or a turn its
   * actor runs or queues. Undefined when nothing does: the session may be evicted (the idle sweep, a
   * hand-over), and a hand-over that waits too long says this.
   */
  whyBusy(sessionId: string): string | undefined {
    if (this.#saves.has(sessionId)) return "its snapshot is being saved";
    if (this.#starting.has(sessionId)) return "its actor is being restored";
    if (this.options.busy?.(sessionId)) return "a delivery of it is under way or held";
    const snapshot = this.#actors.get(sessionId)?.actor.getSnapshot();
    // No actor, or one that stopped or failed: nothing worth keeping.
    if (snapshot?.status !== "active") return undefined;
    const { value, context } = snapshot;
    if (value === "idle" && context.current === null && context.queue.length === 0) return undefined;
    return `its actor is ${String(value)} (turn ${context.current?.turn_id ?? "none"}, ${context.queue.length} queued)`;
  }

  /** Stops and forgets the session's actor: its next turn restores it from the stored snapshot. */
  evict(sessionId: string): void {
    const hosted = this.#actors.get(sessionId);
    this.#actors.delete(sessionId);
    hosted?.actor.stop();
    if (this.#actors.size === 0) this.#stopSweep();
  }

  #stopSweep(): void {
    clearInterval(this.#sweep);
    this.#sweep = undefined;
  }

  /**
   * Saves the session's snapshot (and a replay checkpoint when given) after
   * the saves already under way for the session, so a later turn's state is
   * never overwritten by an earlier one's.
   */
  save(sessionId: string, snapshot: SessionSnapshot, checkpoint?: Checkpoint): Promise<void> {
    const hosted = this.#actors.get(sessionId);
    if (hosted) hosted.usedAt = performance.now();
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
    this.#stopSweep();
    for (const { actor } of this.#actors.values()) actor.stop();
    this.#actors.clear();
  }
}
