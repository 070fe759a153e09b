import type { KV } from "@nats-io/kv";
import { Kvm } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/nats-core";
import { buckets } from "../bus/subjects.ts";
import type { Cooldowns } from "../cognition/scheduler.ts";

const decoder = new TextDecoder();
const encoder = new TextEncoder();

/**
 * The scheduler's per-session cooldowns, in a JetStream KV bucket, so they
 * survive a worker restart and are shared by every scheduler worker.
 */
export class CooldownStore {
  private constructor(private readonly kv: KV) {}

  static async open(nc: NatsConnection): Promise<CooldownStore> {
    return new CooldownStore(await new Kvm(nc).create(buckets.scheduler, { history: 1 }));
  }

  async load(sessionId: string): Promise<Cooldowns> {
    const entry = await this.kv.get(sessionId);
    return entry?.operation === "PUT" ? (JSON.parse(decoder.decode(entry.value)) as Cooldowns) : {};
  }

  async save(sessionId: string, cooldowns: Cooldowns): Promise<void> {
    await this.kv.put(sessionId, encoder.encode(JSON.stringify(cooldowns)));
  }
}
