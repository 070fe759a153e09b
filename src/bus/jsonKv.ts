import { JetStreamApiCodes, JetStreamApiError } from "@nats-io/jetstream";
import type { KV, KvOptions } from "@nats-io/kv";
import { Kvm } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/nats-core";
import type { z } from "zod";

const decoder = new TextDecoder();

/** A compare-and-set that lost: the key changed (or exists) since it was read. */
const isConflict = (error: unknown): boolean =>
  (error instanceof JetStreamApiError && error.code === JetStreamApiCodes.StreamWrongLastSequence) ||
  /wrong last sequence|key exists/i.test(String((error as Error)?.message));
const encoder = new TextEncoder();

/**
 * A JetStream KV bucket of JSON values checked by a zod schema, with
 * compare-and-set updates: the one way every store here talks to KV.
 */
export class JsonKv<S extends z.ZodType> {
  private constructor(
    readonly kv: KV,
    private readonly schema: S,
  ) {}

  static async open<S extends z.ZodType>(
    nc: NatsConnection,
    bucket: string,
    schema: S,
    options: Partial<KvOptions> = {},
  ): Promise<JsonKv<S>> {
    return new JsonKv(await new Kvm(nc).create(bucket, { history: 1, ...options }), schema);
  }

  /** The value and its revision, or null when absent (or deleted). */
  async get(key: string): Promise<{ value: z.infer<S>; revision: number } | null> {
    const entry = await this.kv.get(key);
    if (entry?.operation !== "PUT") return null;
    return { value: this.schema.parse(JSON.parse(decoder.decode(entry.value))), revision: entry.revision };
  }

  async put(key: string, value: z.infer<S>): Promise<void> {
    await this.kv.put(key, encoder.encode(JSON.stringify(value)));
  }

  /** Creates the key; false when it already exists. */
  async create(key: string, value: z.infer<S>): Promise<boolean> {
    try {
      await this.kv.create(key, encoder.encode(JSON.stringify(value)));
      return true;
    } catch (error) {
      if (isConflict(error)) return false;
      throw error;
    }
  }

  /**
   * Read-modify-write with compare-and-set, retried on conflict. `change`
   * gets the current value (null when absent) and returns the new one, or
   * null to leave it as it is. Returns what was written (or kept).
   */
  async update(
    key: string,
    change: (current: z.infer<S> | null) => z.infer<S> | null,
    attempts = 50,
  ): Promise<z.infer<S> | null> {
    for (let attempt = 0; attempt < attempts; attempt++) {
      const current = await this.get(key);
      const next = change(current?.value ?? null);
      if (next === null) return current?.value ?? null;
      try {
        if (current) await this.kv.update(key, encoder.encode(JSON.stringify(next)), current.revision);
        else await this.kv.create(key, encoder.encode(JSON.stringify(next)));
        return next;
      } catch (error) {
        // Someone else wrote in between: read again. Anything else is a real failure.
        if (!isConflict(error)) throw error;
      }
    }
    throw new Error(`KV ${key}: too much contention`);
  }

  async delete(key: string): Promise<void> {
    await this.kv.delete(key);
  }

  /** Keys matching a subject-style filter (e.g. `session.*`), each once (a key updated mid-listing can be listed twice). */
  async keys(filter = ">"): Promise<string[]> {
    const keys = new Set<string>();
    for await (const key of await this.kv.keys(filter)) keys.add(key);
    return [...keys];
  }
}
