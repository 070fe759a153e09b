import type { NatsConnection } from "@nats-io/nats-core";
import { z } from "zod";
import { encodeRecord } from "../../bus/codec.ts";
import { isConflict, JsonKv } from "../../bus/jsonKv.ts";
import { buckets } from "../../bus/subjects.ts";
import { backoffMs, pause } from "../../deadline.ts";
import { isConclaveError, messageOf } from "../../errors.ts";
import { type Logger, silentLogger } from "../../telemetry/log.ts";
import { type HeartbeatConnection, RunnerLiveness } from "./liveness.ts";

const Owner = z.object({ runner: z.string() });

const encode = (runner: string) => encodeRecord({ runner });

/** Tries to take a session before giving up for this delivery (each lost one means the key changed meanwhile). */
const ACQUIRE_ATTEMPTS = 3;
/** How a release NATS did not take is tried again: from 250 ms, doubling, at most 5 s apart. */
const RELEASE_RETRY = { baseMs: 250, maxMs: 5_000 };

/**
 * One runner owns a session at a time. Ownership is a key of the
 * `conclave_session_owners` bucket (session → runner), written once, when a
 * runner first takes the session, and never renewed: it holds while its
 * runner's liveness lease (`liveness.ts`, one per runner) lives. A runner
 * taking a turn of a session whose owner is dead takes the session over with
 * compare-and-set; a runner lets a session go (`release`) when it evicts it
 * from memory or stops. An idle session costs no timer and no KV traffic.
 *
 * A runner whose own lease lapses (cut off from NATS) owns nothing from then
 * on: `whenLapsed` tells the runner, which drops its sessions, and it takes
 * them again, from stored state, on their next turns.
 */
export class SessionLeases {
  /** The sessions this runner owns, with their ownership record's revision (released by compare-and-set). */
  readonly #owned = new Map<string, number>();
  /**
   * Releases under way, with the revision each deletes and what stops its retries (taken again here, `acquire`
   * reads the record afresh instead): taking the session again waits for them, so a late delete never removes
   * a fresh take.
   */
  readonly #releasing = new Map<string, { done: Promise<void>; stop: AbortController; revision: number }>();
  /** Closing: each release is tried once more, not again. */
  readonly #closing = new AbortController();
  /**
   * What this runner owned when its lease lapsed, with the records' revisions: let go once its heartbeats are
   * stored again (unless a survivor took them meanwhile). Left naming a live runner that no longer hosts them,
   * they would keep the sessions from the runner that now pulls their partitions.
   */
  readonly #lapsedOwned = new Map<string, number>();
  #onLapsed: () => void = () => {};
  #onMembersChanged: () => void = () => {};

  private constructor(
    private readonly owners: JsonKv<typeof Owner>,
    private readonly liveness: RunnerLiveness,
    private readonly log: Logger,
  ) {}

  static async open(
    nc: NatsConnection,
    runner: string,
    options: { log?: Logger; heartbeat?: HeartbeatConnection } = {},
  ): Promise<SessionLeases> {
    const log = options.log ?? silentLogger;
    // The lease may lapse before the leases exist: nothing is owned yet then, so nothing to let go.
    let lapsed = () => {};
    let restored = () => {};
    let membersChanged = () => {};
    const [owners, liveness] = await Promise.all([
      // Who owns a session is read from the leader: a copy a partition left behind would name an old owner.
      JsonKv.open(nc, buckets.owners, Owner, { leaderReads: true }),
      RunnerLiveness.open(nc, runner, {
        log,
        events: {
          onLapsed: () => lapsed(),
          onRestored: () => restored(),
          onMembersChanged: () => membersChanged(),
        },
        ...(options.heartbeat ? { heartbeat: options.heartbeat } : {}),
      }),
    ]);
    const leases = new SessionLeases(owners, liveness, log);
    lapsed = () => leases.#lapsed();
    restored = () => leases.#letGoOfLapsed();
    membersChanged = () => leases.#onMembersChanged();
    return leases;
  }

  /** This runner's name, in ownership records and turn statuses. */
  get runner(): string {
    return this.liveness.runner;
  }

  /** Calls `handler` when this runner's liveness lease lapses (it then owns no session). */
  whenLapsed(handler: () => void): void {
    this.#onLapsed = handler;
  }

  /** Calls `handler` when a runner joins or leaves (see `members`). */
  whenMembersChanged(handler: () => void): void {
    this.#onMembersChanged = handler;
  }

  /** The live runners, this one included, sorted (`RunnerLiveness.members`). */
  members(): string[] {
    return this.liveness.members();
  }

  /** The sessions this runner owns now. */
  ownedSessions(): string[] {
    return [...this.#owned.keys()];
  }

  /** True when this runner owns the session (now or already): never while its own lease has lapsed. */
  async acquire(sessionId: string): Promise<boolean> {
    if (!this.liveness.alive) return false;
    const release = this.#releasing.get(sessionId);
    if (!release) return this.#take(sessionId);
    release.stop.abort();
    await release.done;
    let owned = false;
    try {
      owned = await this.#take(sessionId);
      return owned;
    } finally {
      // Its release was stopped to take it back and it was not taken (the lease lapsed meanwhile, NATS failed):
      // the record may still name this runner, which would keep the session from the runner pulling its
      // partition for as long as this one lives. So it is let go after all.
      if (!owned) this.#letGoAfterAll(sessionId, release.revision);
    }
  }

  /** Deletes the record of a session this runner stopped releasing and did not take back (as of `revision`). */
  #letGoAfterAll(sessionId: string, revision: number): void {
    if (this.#owned.has(sessionId) || this.#releasing.has(sessionId)) return;
    if (this.liveness.alive) {
      this.#owned.set(sessionId, revision);
      void this.release(sessionId);
    } else this.#lapsedOwned.set(sessionId, revision); // let go once its heartbeats are stored again
  }

  /** `acquire` once no release of the session is under way. */
  async #take(sessionId: string): Promise<boolean> {
    if (!this.liveness.alive) return false;
    if (this.#owned.has(sessionId)) return true;
    for (let attempt = 0; attempt < ACQUIRE_ATTEMPTS; attempt++) {
      const created = await this.owners.kv.create(sessionId, encode(this.runner)).catch((error: unknown) => {
        if (isConflict(error)) return null;
        throw error;
      });
      if (created !== null) return this.#own(sessionId, created);
      let holder: Awaited<ReturnType<typeof this.owners.get>>;
      try {
        holder = await this.owners.get(sessionId);
      } catch (error) {
        if (!isConclaveError(error, "corrupt_value")) throw error;
        // A damaged record is nobody's (it was reported on conclave.dlq.kv): take the session.
        return this.#own(sessionId, await this.owners.kv.put(sessionId, encode(this.runner)));
      }
      if (holder === null) continue; // released meanwhile: create it again
      const owner = holder.value.runner;
      if (owner === this.runner) {
        if (!this.#lapsedOwned.has(sessionId)) return this.#own(sessionId, holder.revision);
        // Its record from before a lapse, maybe being deleted (`#letGoOfLapsed`): rewritten, so that delete misses.
        try {
          return this.#own(sessionId, await this.owners.kv.update(sessionId, encode(this.runner), holder.revision));
        } catch (error) {
          if (!isConflict(error)) throw error;
          continue; // deleted meanwhile: take it anew
        }
      }
      // The watch says whether its owner lives; a read of its lease confirms a death before the session is taken.
      if (this.liveness.isAlive(owner) || !(await this.liveness.confirmedDead(owner))) return false;
      try {
        const revision = await this.owners.kv.update(sessionId, encode(this.runner), holder.revision);
        this.log.info(`session ${sessionId}: taken over from ${owner}, whose liveness lease lapsed`, {
          session_id: sessionId,
        });
        return this.#own(sessionId, revision);
      } catch (error) {
        if (!isConflict(error)) throw error; // another runner took it first: look again
      }
    }
    return false;
  }

  /**
   * The runner the session's ownership record names (undefined: none), read afresh, for what is said of it:
   * this runner's own name says whether its lease has lapsed (it then takes nothing, its own sessions included).
   */
  async ownerOf(sessionId: string): Promise<string | undefined> {
    const owner = (await this.owners.get(sessionId))?.value.runner;
    if (owner !== this.runner) return owner;
    return this.liveness.alive ? `${owner} (this runner)` : `${owner} (this runner, whose liveness lease lapsed)`;
  }

  #own(sessionId: string, revision: number): boolean {
    this.#lapsedOwned.delete(sessionId);
    this.#owned.set(sessionId, revision);
    return true;
  }

  owns(sessionId: string): boolean {
    return this.liveness.alive && this.#owned.has(sessionId);
  }

  /** How many sessions this runner owns. */
  get size(): number {
    return this.#owned.size;
  }

  /** Lets the session go: its record is deleted unless another runner took it meanwhile. */
  release(sessionId: string): Promise<void> {
    const revision = this.#owned.get(sessionId);
    if (revision === undefined) return this.#releasing.get(sessionId)?.done ?? Promise.resolve();
    this.#owned.delete(sessionId);
    const stop = new AbortController();
    const done = this.#deleteRecord(sessionId, revision, stop.signal).finally(() => {
      if (this.#releasing.get(sessionId)?.done === done) this.#releasing.delete(sessionId);
    });
    this.#releasing.set(sessionId, { done, stop, revision });
    return done;
  }

  /**
   * Deletes the session's ownership record as of `revision`; resolves once it is deleted or another runner
   * took it (a conflict: nothing to undo). NATS out of reach (a heal, an election): tried again, backing off,
   * until `stop` fires or the leases close. A record left naming this runner, alive and no longer pulling the
   * session's partition, would keep every later turn of the session from the runner that does.
   */
  async #deleteRecord(sessionId: string, revision: number, stop?: AbortSignal): Promise<void> {
    const signal = stop ? AbortSignal.any([stop, this.#closing.signal]) : this.#closing.signal;
    for (let attempt = 0; ; attempt++) {
      try {
        await this.owners.kv.delete(sessionId, { previousSeq: revision });
        return;
      } catch (error) {
        if (isConflict(error)) return;
        if (attempt === 0)
          this.log.warn(`session ${sessionId}: not let go yet (${messageOf(error)}); trying again`, {
            session_id: sessionId,
          });
      }
      if (signal.aborted) return;
      await pause(backoffMs(attempt, RELEASE_RETRY), signal);
      if (signal.aborted) return;
    }
  }

  #lapsed(): void {
    // The records stay (NATS is likely out of reach): survivors take the sessions over, or this runner takes them
    // back on their next turns if nobody did; once it beats again, it deletes those still naming it.
    for (const [sessionId, revision] of this.#owned) this.#lapsedOwned.set(sessionId, revision);
    this.#owned.clear();
    this.#onLapsed();
  }

  /** Deletes the records of sessions it owned when its lease lapsed, each unless another runner took it since. */
  #letGoOfLapsed(): void {
    // Taken back here meanwhile (`acquire` rewrites the record): the delete conflicts, and ends.
    for (const [sessionId, revision] of [...this.#lapsedOwned]) {
      void this.#deleteRecord(sessionId, revision).then(() => {
        if (this.#lapsedOwned.get(sessionId) === revision) this.#lapsedOwned.delete(sessionId);
      });
    }
  }

  async close(): Promise<void> {
    this.#closing.abort();
    await Promise.allSettled([...this.#owned.keys()].map((sessionId) => this.release(sessionId)));
    await this.liveness.close();
  }
}
