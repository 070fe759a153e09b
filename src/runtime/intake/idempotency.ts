import { createHash } from "node:crypto";
import type { NatsConnection } from "@nats-io/nats-core";
import { z } from "zod";
import { encodeRecord } from "../../bus/codec.ts";
import { isConflict, JsonKv } from "../../bus/jsonKv.ts";
import { buckets } from "../../bus/subjects.ts";
import { pause } from "../../deadline.ts";
import { ConclaveError } from "../../errors.ts";

/**
 * An idempotency key's reservation, in the `conclave_sessions` bucket
 * (`idem.<session>.<hash of the key>`): `reserving` while the first
 * submission gets its turn id, `reserved` once it has one (the WAL write may
 * or may not have landed), `accepted` once the turn is stored and acked.
 * Records written before reservations had states (`{turn_id}` alone) read as
 * accepted, or as a reservation to recover when their turn id is 0.
 */
const Reservation = z.preprocess(
  (value) =>
    value && typeof value === "object" && !("state" in value)
      ? { ...value, state: (value as { turn_id?: number }).turn_id ? "accepted" : "reserving" }
      : value,
  z.object({
    state: z.enum(["reserving", "reserved", "accepted"]),
    turn_id: z.number().int().min(0),
    /** The runner that made the last transition, for people reading the bucket. */
    by: z.string().optional(),
  }),
);
type Reservation = z.infer<typeof Reservation>;

/**
 * How long a reservation may stand still (same revision) before the
 * acceptance that made it is taken for dead and a retry recovers it.
 * Measured by the waiting runner's own clock, so runners' clocks need not agree.
 */
export const RESERVATION_STALE_MS = 2_000;

/** This acceptance's hold on a key: every change is a compare-and-set on `revision`. */
export interface ReservationHandle {
  readonly name: string;
  revision: number;
}

/** What a submission carrying an idempotency key must do. */
export type Claim =
  /** The key's turn was accepted before: answer with its ack, run nothing. */
  | { kind: "accepted"; turnId: number }
  /** This submission is the key's first: reserve a turn id, store the turn, accept. */
  | { kind: "fresh"; handle: ReservationHandle }
  /**
   * An acceptance reserved `turnId` for the key and died: the turn may or may
   * not be in the WAL. Store it again under the same turn id (the WAL's
   * message id makes a second copy a no-op), then accept.
   */
  | { kind: "recover"; turnId: number; handle: ReservationHandle };

/** Another acceptance took the reservation over (this one was taken for dead): it must stop. */
export class ReservationLostError extends ConclaveError<"internal"> {
  constructor(sessionId: string) {
    super("internal", `the idempotency key's reservation in session ${sessionId} was taken over; submit again`);
  }
}

const keyName = (sessionId: string, key: string) =>
  `idem.${sessionId}.${createHash("sha256").update(key).digest("hex").slice(0, 32)}`;

const encode = (reservation: Reservation) => encodeRecord(reservation);

/**
 * Idempotency keys of submissions: the first submission with a key reserves
 * it, a repeat gets the first one's turn, and a reservation whose acceptance
 * died is recovered by the next retry, so retrying with a key always ends in
 * an ack (the advice to clients in docs/protocol.md holds).
 */
export class IdempotencyStore {
  private constructor(
    private readonly store: JsonKv<typeof Reservation>,
    private readonly runner: string,
  ) {}

  static async open(nc: NatsConnection, runner: string): Promise<IdempotencyStore> {
    return new IdempotencyStore(await JsonKv.open(nc, buckets.sessions, Reservation), runner);
  }

  /** Claims `key` for a submission to `sessionId`; see {@link Claim}. */
  async claim(sessionId: string, key: string, staleMs = RESERVATION_STALE_MS): Promise<Claim> {
    const name = keyName(sessionId, key);
    let watched = null as { revision: number; since: number } | null;
    for (let wait = 10; ; wait = Math.min(wait * 2, 200)) {
      const created = await this.#create(name, { state: "reserving", turn_id: 0, by: this.runner });
      if (created !== null) return { kind: "fresh", handle: { name, revision: created } };
      const current = await this.store.get(name);
      if (!current) continue; // released in between: try to create it again
      if (current.value.state === "accepted") return { kind: "accepted", turnId: current.value.turn_id };
      const now = performance.now();
      if (watched?.revision !== current.revision) watched = { revision: current.revision, since: now };
      if (now - watched.since >= staleMs) {
        // Nothing moved for staleMs: its acceptance died. Take the reservation over, compare-and-set.
        const taken: Reservation = { ...current.value, by: this.runner };
        const handle = { name, revision: current.revision };
        if (!(await this.#swap(handle, taken))) continue;
        return current.value.state === "reserved" && current.value.turn_id > 0
          ? { kind: "recover", turnId: current.value.turn_id, handle }
          : { kind: "fresh", handle };
      }
      await pause(wait);
    }
  }

  /** Records the turn id this acceptance got for the key. Throws ReservationLostError if it was taken over. */
  async reserve(sessionId: string, handle: ReservationHandle, turnId: number): Promise<void> {
    if (!(await this.#swap(handle, { state: "reserved", turn_id: turnId, by: this.runner }))) {
      throw new ReservationLostError(sessionId);
    }
  }

  /**
   * Marks the key's turn accepted. A lost compare-and-set is fine when the
   * acceptance that took over accepted the same turn.
   */
  async accept(sessionId: string, handle: ReservationHandle, turnId: number): Promise<void> {
    if (await this.#swap(handle, { state: "accepted", turn_id: turnId, by: this.runner })) return;
    const current = await this.store.get(handle.name);
    if (current?.value.turn_id === turnId) return;
    throw new ReservationLostError(sessionId);
  }

  /** Frees the key (its turn could not be stored), unless another acceptance took it over. */
  async release(handle: ReservationHandle): Promise<void> {
    try {
      await this.store.kv.delete(handle.name, { previousSeq: handle.revision });
    } catch (error) {
      if (!isConflict(error)) throw error;
    }
  }

  /** Creates the key; its revision, or null when it exists. */
  async #create(name: string, value: Reservation): Promise<number | null> {
    try {
      return await this.store.kv.create(name, encode(value));
    } catch (error) {
      if (isConflict(error)) return null;
      throw error;
    }
  }

  /** Compare-and-set: writes `next` if the key is still at `handle.revision`; false when it moved. */
  async #swap(handle: ReservationHandle, next: Reservation): Promise<boolean> {
    try {
      handle.revision = await this.store.kv.update(handle.name, encode(next), handle.revision);
      return true;
    } catch (error) {
      if (isConflict(error)) return false;
      throw error;
    }
  }
}
