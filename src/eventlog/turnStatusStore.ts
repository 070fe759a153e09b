import { type JetStreamManager, jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import { JsonKv } from "../bus/jsonKv.ts";
import { buckets } from "../bus/subjects.ts";
import { turnKey } from "../contracts/turnKey.ts";
import { type TurnStatus, TurnStatusRecord } from "../contracts/wal.ts";
import { isConclaveError } from "../errors.ts";

/** Turn statuses a runner remembers, most recent ones (a turn's status is rewritten within seconds). */
const STATUSES_CACHED = 4_096;

/**
 * Where every accepted turn stands (`conclave_turns` KV bucket, key
 * `<session>.<turn>`): pending → inflight → done | failed | expired.
 */
export class TurnStatusStore {
  private constructor(
    private readonly kv: JsonKv<typeof TurnStatusRecord>,
    private readonly jsm: JetStreamManager,
  ) {}

  /**
   * Opens (or creates) the bucket. `replicas`: those of a bucket found already made (a reader takes the
   * store as it is); default CONCLAVE_REPLICAS, which an existing bucket must have.
   */
  static async open(nc: NatsConnection, options: { replicas?: number } = {}): Promise<TurnStatusStore> {
    // A turn's status is written three times by the runner that accepts and runs it: it reads it once.
    const [kv, jsm] = await Promise.all([
      JsonKv.open(nc, buckets.turns, TurnStatusRecord, { cacheRevisions: STATUSES_CACHED, ...options }),
      jetstreamManager(nc),
    ]);
    return new TurnStatusStore(kv, jsm);
  }

  async get(sessionId: string, turnId: number): Promise<TurnStatusRecord | null> {
    return (await this.kv.get(`${turnKey(sessionId, turnId)}`))?.value ?? null;
  }

  /**
   * Records an accepted turn as pending, unless a runner already took it (the
   * ingress writes this alongside the WAL entry, and a runner may be faster).
   */
  async pending(sessionId: string, turnId: number, submittedAt: number): Promise<void> {
    await this.kv.create(`${turnKey(sessionId, turnId)}`, {
      session_id: sessionId,
      turn_id: turnId,
      status: "pending",
      submitted_at: submittedAt,
      updated_at: Date.now(),
      attempts: 0,
    });
  }

  /**
   * A runner takes the turn (or takes it over): inflight, one more attempt.
   * Returns the record as it was; a turn already done, failed or expired is
   * left as it is (`taken` false), and so is one whose entry is `stale`: it
   * answers a suspension older than the last one answered (`answers` is the
   * entry's `suspension_seq`, -1 for a run's first entry).
   */
  async take(
    sessionId: string,
    turnId: number,
    runner: string,
    submittedAt: number,
    maxAttempts: number,
    answers = -1,
    /**
     * This runner process took the turn before and let it go itself (its lease lapsed, or it handed the turn
     * back): taking it again is no new attempt, and never makes it poison.
     */
    retake = false,
  ): Promise<{ before: TurnStatusRecord | null; taken: boolean; poison: boolean; stale: boolean; ownRetake: boolean }> {
    let before: TurnStatusRecord | null = null;
    const staleFor = (record: TurnStatusRecord | null) =>
      record?.answered_through !== undefined && answers < record.answered_through;
    const ownRetake = (record: TurnStatusRecord | null) => retake && record?.runner === runner;
    await this.#update(`${turnKey(sessionId, turnId)}`, (current) => {
      before = current;
      if (current && current.status !== "pending" && current.status !== "inflight") return null;
      if (current && current.attempts >= maxAttempts && !ownRetake(current)) return null;
      if (staleFor(current)) return null;
      return {
        session_id: sessionId,
        turn_id: turnId,
        submitted_at: current?.submitted_at ?? submittedAt,
        status: "inflight",
        updated_at: Date.now(),
        runner,
        attempts: (current?.attempts ?? 0) + (ownRetake(current) ? 0 : 1),
        ...(current?.cancel_reason !== undefined ? { cancel_reason: current.cancel_reason } : {}),
        ...(current?.answered_through !== undefined ? { answered_through: current.answered_through } : {}),
      };
    });
    const previous = before as TurnStatusRecord | null;
    const open = !previous || previous.status === "pending" || previous.status === "inflight";
    const stale = open && staleFor(previous);
    const poison = open && !stale && !!previous && previous.attempts >= maxAttempts && !ownRetake(previous);
    return { before: previous, taken: open && !poison && !stale, poison, stale, ownRetake: ownRetake(previous) };
  }

  /**
   * Marks a pending or inflight turn as cancelled (a runner that takes it
   * ends it at once). Returns the record as it now is; null when the session
   * has no such turn. A turn that already ended is left as it is.
   */
  async requestCancel(sessionId: string, turnId: number, reason: string): Promise<TurnStatusRecord | null> {
    let after: TurnStatusRecord | null = null;
    await this.#update(`${turnKey(sessionId, turnId)}`, (current) => {
      after = current;
      if (!current || (current.status !== "pending" && current.status !== "inflight")) return null;
      if (current.cancel_reason !== undefined) return null;
      after = { ...current, cancel_reason: reason, updated_at: Date.now() };
      return after;
    });
    return after;
  }

  /**
   * A suspended recipe run is answered: suspended → pending (its attempts
   * count afresh), once. Returns the record as it was when this call moved
   * it; null when it was not suspended (or, with `seq`, not in that
   * suspension): someone else answered first, or it ended.
   */
  async resumeSuspended(sessionId: string, turnId: number, seq?: number): Promise<TurnStatusRecord | null> {
    let before: TurnStatusRecord | null = null;
    await this.#update(`${turnKey(sessionId, turnId)}`, (current) => {
      before = null; // a change tried on a copy that lost its compare-and-set did not happen
      if (current?.status !== "suspended" || !current.suspended) return null;
      if (seq !== undefined && current.suspended.seq !== seq) return null;
      before = current;
      const { suspended: _suspended, ...rest } = current;
      return {
        ...rest,
        status: "pending",
        attempts: 0,
        updated_at: Date.now(),
        answered_through: current.suspended.seq,
      };
    });
    return before;
  }

  /**
   * Undoes `resumeSuspended` when the answer it let through could not be
   * stored: pending → suspended again, as `before` was, provided nothing has
   * moved the turn since (still pending from that very suspension). Returns
   * whether it was put back.
   */
  async reopenSuspension(sessionId: string, turnId: number, before: TurnStatusRecord): Promise<boolean> {
    const seq = before.suspended?.seq;
    if (seq === undefined) return false;
    let reopened = false;
    await this.#update(`${turnKey(sessionId, turnId)}`, (current) => {
      reopened = false; // as in resumeSuspended: only the change that was stored counts
      if (current?.status !== "pending" || current.answered_through !== seq) return null;
      reopened = true;
      return { ...before, updated_at: Date.now() };
    });
    return reopened;
  }

  async finish(
    sessionId: string,
    turnId: number,
    status: Exclude<TurnStatus, "pending" | "inflight">,
    detail: { outcome?: string; reason?: string; suspended?: TurnStatusRecord["suspended"] } = {},
  ): Promise<void> {
    await this.#update(`${turnKey(sessionId, turnId)}`, (current) => ({
      session_id: sessionId,
      turn_id: turnId,
      submitted_at: current?.submitted_at ?? Date.now(),
      attempts: current?.attempts ?? 0,
      ...(current?.runner ? { runner: current.runner } : {}),
      ...(current?.answered_through !== undefined ? { answered_through: current.answered_through } : {}),
      status,
      updated_at: Date.now(),
      ...detail,
    }));
  }

  /**
   * The turn's status once it is no longer `inflight`, or as it stands when
   * `withinMs` has passed (null when it has none). It follows the key's
   * updates (a KV watch) rather than reading it again and again.
   */
  async settled(sessionId: string, turnId: number, withinMs: number): Promise<TurnStatusRecord | null> {
    const now = await this.get(sessionId, turnId);
    if (now?.status !== "inflight") return now;
    // The watch gives the value as it stands first, so an update made since the read is not missed.
    const watch = await this.kv.kv.watch({ key: turnKey(sessionId, turnId) });
    const timer = setTimeout(() => watch.stop(), withinMs);
    try {
      for await (const _update of watch) {
        const status = await this.get(sessionId, turnId);
        if (status?.status !== "inflight") return status;
      }
      return await this.get(sessionId, turnId);
    } finally {
      clearTimeout(timer);
      watch.stop();
    }
  }

  /** Every turn of a session with a readable status, in turn order (an unreadable one is reported on `conclave.dlq.kv`). */
  async list(sessionId: string): Promise<TurnStatusRecord[]> {
    return (await this.#listMatching(`${sessionId}.*`)).sort((a, b) => a.turn_id - b.turn_id);
  }

  /**
   * Every recipe run waiting for a tool call's approval, oldest first. It
   * reads the status of every turn kept (one stream-info request, paged by
   * the library): fine for a console, not for a hot path.
   */
  async pendingApprovals(sessionId?: string): Promise<TurnStatusRecord[]> {
    const records = await this.#listMatching(sessionId ? `${sessionId}.*` : ">");
    return records
      .filter((record) => record.status === "suspended" && record.suspended?.approval)
      .sort((a, b) => a.updated_at - b.updated_at);
  }

  async #listMatching(keys: string): Promise<TurnStatusRecord[]> {
    // The keys from the bucket's stream info, not a key-listing consumer: that one could wait for its
    // idle heartbeat when a status was written while it listed (as when a turn's `done` lands just after
    // its TURN_COMPLETED).
    const prefix = `$KV.${buckets.turns}.`;
    const info = await this.jsm.streams.info(`KV_${buckets.turns}`, { subjects_filter: `${prefix}${keys}` });
    const found = Object.keys(info.state.subjects ?? {}).map((subject) => subject.slice(prefix.length));
    const records = await Promise.all(
      found.map((key) =>
        this.kv.get(key).catch((error: unknown) => {
          if (isConclaveError(error, "corrupt_value")) return null;
          throw error;
        }),
      ),
    );
    return records.flatMap((record) => (record ? [record.value] : []));
  }

  /**
   * Read-modify-write. A record that fails its schema (already reported on
   * `conclave.dlq.kv` by the read) is written afresh as if absent: a turn's
   * status is the runtime's own bookkeeping, and a damaged one must not hold
   * the turn up for good.
   */
  async #update(key: string, change: (current: TurnStatusRecord | null) => TurnStatusRecord | null): Promise<void> {
    try {
      await this.kv.update(key, change);
    } catch (error) {
      if (!isConclaveError(error, "corrupt_value")) throw error;
      const next = change(null);
      if (next) await this.kv.put(key, next);
    }
  }
}
