import { createHash } from "node:crypto";
import type { NatsConnection } from "@nats-io/nats-core";
import { z } from "zod";
import { JsonKv } from "../bus/jsonKv.ts";
import { buckets } from "../bus/subjects.ts";
import { Modulators, Stance } from "../contracts/workspace.ts";

/** What a session carries from one turn to the next, as persisted after each turn. */
export const SessionSnapshot = z.object({
  turns_completed: z.number().int().min(0),
  /** The last turn this session finished (in turn order). */
  last_turn_id: z.number().int().min(0),
  modulators: Modulators,
  stance: Stance,
});
export type SessionSnapshot = z.infer<typeof SessionSnapshot>;

const Counter = z.object({
  last_turn_id: z.number().int().min(0),
  last_done_turn_id: z.number().int().min(0).default(0),
});
const Idempotency = z.object({ turn_id: z.number().int().min(0) });
const Checkpoint = z.object({ through_turn_id: z.number().int().min(0), snapshot: SessionSnapshot });
export type Checkpoint = z.infer<typeof Checkpoint>;

/** KV keys are subject tokens: hash arbitrary idempotency keys into one. */
const idempotencyKey = (sessionId: string, key: string) =>
  `idem.${sessionId}.${createHash("sha256").update(key).digest("hex").slice(0, 32)}`;

/**
 * Per-session state shared by every runner, in the `conclave_sessions` KV
 * bucket: the turn counter (ids handed out with compare-and-set, so they
 * continue across restarts and are never given twice), idempotency keys, the
 * session snapshot after each turn, and replay checkpoints.
 */
export class SessionStore {
  private constructor(
    private readonly counters: JsonKv<typeof Counter>,
    private readonly idempotency: JsonKv<typeof Idempotency>,
    private readonly snapshots: JsonKv<typeof SessionSnapshot>,
    private readonly checkpoints: JsonKv<typeof Checkpoint>,
  ) {}

  static async open(nc: NatsConnection): Promise<SessionStore> {
    const open = <S extends z.ZodType>(schema: S) => JsonKv.open(nc, buckets.sessions, schema);
    return new SessionStore(
      await open(Counter),
      await open(Idempotency),
      await open(SessionSnapshot),
      await open(Checkpoint),
    );
  }

  /** The last turn id given out for the session (0 for a new session). */
  async lastTurnId(sessionId: string): Promise<number> {
    return (await this.counters.get(`counter.${sessionId}`))?.value.last_turn_id ?? 0;
  }

  /** Reserves the session's next turn id. */
  async nextTurnId(sessionId: string): Promise<number> {
    const next = await this.counters.update(`counter.${sessionId}`, (current) => ({
      last_turn_id: (current?.last_turn_id ?? 0) + 1,
      last_done_turn_id: current?.last_done_turn_id ?? 0,
    }));
    return next!.last_turn_id;
  }

  /** True while a turn of the session is accepted and not yet finished. */
  async busy(sessionId: string): Promise<boolean> {
    const counter = (await this.counters.get(`counter.${sessionId}`))?.value;
    return !!counter && counter.last_done_turn_id < counter.last_turn_id;
  }

  async markDone(sessionId: string, turnId: number): Promise<void> {
    await this.counters.update(`counter.${sessionId}`, (current) =>
      current && current.last_done_turn_id < turnId ? { ...current, last_done_turn_id: turnId } : null,
    );
  }

  /**
   * Claims an idempotency key for a submission. Returns the turn id already
   * bound to it (a repeat), or null when this submission is the first: it must
   * then `bindIdempotency` once it has its turn id.
   */
  async claimIdempotency(sessionId: string, key: string): Promise<number | null> {
    const name = idempotencyKey(sessionId, key);
    for (let attempt = 0; attempt < 100; attempt++) {
      if (await this.idempotency.create(name, { turn_id: 0 })) return null;
      const bound = (await this.idempotency.get(name))?.value.turn_id ?? 0;
      if (bound > 0) return bound;
      // The first submission is still being accepted: wait for its turn id.
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    throw new Error(`idempotency key of session ${sessionId} is stuck`);
  }

  async bindIdempotency(sessionId: string, key: string, turnId: number): Promise<void> {
    await this.idempotency.put(idempotencyKey(sessionId, key), { turn_id: turnId });
  }

  async releaseIdempotency(sessionId: string, key: string): Promise<void> {
    await this.idempotency.delete(idempotencyKey(sessionId, key));
  }

  async snapshot(sessionId: string): Promise<SessionSnapshot | null> {
    return (await this.snapshots.get(`snapshot.${sessionId}`))?.value ?? null;
  }

  async saveSnapshot(sessionId: string, snapshot: SessionSnapshot): Promise<void> {
    await this.snapshots.put(`snapshot.${sessionId}`, snapshot);
  }

  async checkpoint(sessionId: string): Promise<Checkpoint | null> {
    return (await this.checkpoints.get(`checkpoint.${sessionId}`))?.value ?? null;
  }

  async saveCheckpoint(sessionId: string, checkpoint: Checkpoint): Promise<void> {
    await this.checkpoints.put(`checkpoint.${sessionId}`, checkpoint);
  }
}
