import type { NatsConnection } from "@nats-io/nats-core";
import { z } from "zod";
import { CorruptValueError, JsonKv } from "../bus/jsonKv.ts";
import { buckets } from "../bus/subjects.ts";
import type { Cooldowns } from "../cognition/scheduler.ts";

const CooldownRecord = z.record(z.string(), z.number());

/**
 * The scheduler's per-session cooldowns, in the `conclave_scheduler` KV
 * bucket, so they survive a worker restart and are shared by every scheduler
 * worker.
 */
export class CooldownStore {
  private constructor(private readonly kv: JsonKv<typeof CooldownRecord>) {}

  static async open(nc: NatsConnection): Promise<CooldownStore> {
    return new CooldownStore(await JsonKv.open(nc, buckets.scheduler, CooldownRecord));
  }

  /**
   * A session's cooldowns. A stored value that fails its schema (reported as a
   * dead letter by JsonKv) counts as none: cooldowns are soft state, and the
   * scheduler's next save replaces it, so the session heals itself.
   */
  async load(sessionId: string): Promise<Cooldowns> {
    try {
      return (await this.kv.get(sessionId))?.value ?? {};
    } catch (error) {
      if (error instanceof CorruptValueError) return {};
      throw error;
    }
  }

  async save(sessionId: string, cooldowns: Cooldowns): Promise<void> {
    await this.kv.put(sessionId, cooldowns);
  }
}
