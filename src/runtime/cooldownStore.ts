import type { NatsConnection } from "@nats-io/nats-core";
import { z } from "zod";
import { CorruptValueError, JsonKv } from "../bus/jsonKv.ts";
import { buckets } from "../bus/subjects.ts";
import type { Cooldowns } from "../cognition/scheduler.ts";

const CooldownRecord = z.record(z.string(), z.number());

/** The longest a remembered session's changed cooldowns wait to be written. */
const UNSAVED_MAX_MS = 1_000;

/** How a CooldownStore keeps what it reads and writes. */
export interface CooldownStoreOptions {
  /**
   * Keep the cooldowns of up to this many sessions in memory: `load` answers from memory and `save`
   * writes to KV in the background (a failed write is handed to `onSaveError`). For a scheduler
   * hosted by the runner that owns the sessions: a plan then costs no round trip. Cooldowns are soft
   * state: a copy lost in a crash, or stale after a session moved between runners and back, only
   * changes which agent rests. Default 0: every load reads KV and every save is awaited.
   */
  remember?: number;
  onSaveError?: (sessionId: string, error: unknown) => void;
}

/**
 * The scheduler's per-session cooldowns, in the `conclave_scheduler` KV
 * bucket, so they survive a worker restart and are shared by every scheduler
 * worker.
 */
export class CooldownStore {
  /** Sessions' cooldowns held in memory (`remember`), oldest first. */
  readonly #remembered = new Map<string, Cooldowns>();
  /** Sessions whose cooldowns changed since they were last written, with the timer that writes them anyway. */
  readonly #unsaved = new Map<string, ReturnType<typeof setTimeout>>();

  private constructor(
    private readonly kv: JsonKv<typeof CooldownRecord>,
    private readonly options: CooldownStoreOptions,
  ) {}

  static async open(nc: NatsConnection, options: CooldownStoreOptions = {}): Promise<CooldownStore> {
    return new CooldownStore(
      await JsonKv.open(nc, buckets.scheduler, CooldownRecord, { versioned: false }) /* keys are agent ids */,
      options,
    );
  }

  /**
   * A session's cooldowns. A stored value that fails its schema (reported as a
   * dead letter by JsonKv) counts as none: cooldowns are soft state, and the
   * scheduler's next save replaces it, so the session heals itself.
   */
  async load(sessionId: string): Promise<Cooldowns> {
    const remembered = this.#remembered.get(sessionId);
    if (remembered) return remembered;
    try {
      return (await this.kv.get(sessionId))?.value ?? {};
    } catch (error) {
      if (error instanceof CorruptValueError) return {};
      throw error;
    }
  }

  async save(sessionId: string, cooldowns: Cooldowns): Promise<void> {
    const { remember = 0 } = this.options;
    if (remember === 0) return this.kv.put(sessionId, cooldowns);
    this.#remembered.delete(sessionId); // re-inserted last: the map stays in age order, and bounded
    this.#remembered.set(sessionId, cooldowns);
    if (this.#remembered.size > remember) this.#remembered.delete(this.#remembered.keys().next().value as string);
    // Written with the turn's next request (`flush`), so it costs the turn no round trip of its own; at the
    // latest a second later.
    if (!this.#unsaved.has(sessionId)) {
      const timer = setTimeout(() => this.flush(sessionId), UNSAVED_MAX_MS);
      timer.unref();
      this.#unsaved.set(sessionId, timer);
    }
  }

  /** Writes the session's cooldowns saved since the last write, if any (`remember` mode), without waiting. */
  flush(sessionId: string): void {
    const timer = this.#unsaved.get(sessionId);
    if (!timer) return;
    clearTimeout(timer);
    this.#unsaved.delete(sessionId);
    const cooldowns = this.#remembered.get(sessionId);
    if (cooldowns)
      this.kv.put(sessionId, cooldowns).catch((error: unknown) => this.options.onSaveError?.(sessionId, error));
  }
}
