/**
 * Blackboards in the NATS KV bucket `conclave_blackboards`, one key per
 * session: the default backend, since every runner is on the bus already.
 */
import type { NatsConnection } from "@nats-io/nats-core";
import { z } from "zod";
import { CorruptValueError, JsonKv } from "../bus/jsonKv.ts";
import { BLACKBOARD_BUCKET } from "../bus/subjects.ts";
import { withDeadline } from "../deadline.ts";
import { scrubbed } from "../stores/redact.ts";
import {
  type BlackboardStore,
  BlackboardStoreError,
  checkSessionId,
  corrupt,
  DEFAULT_BLACKBOARD_TIMEOUT_MS,
  encodeBlackboard,
  MAX_BLACKBOARD_BYTES,
  noAnswer,
} from "./store.ts";

/**
 * A JSON object, passed through as parsed. A `z.custom` rather than a
 * `z.record`, which copies keys into a new object (a stored `__proto__` key
 * would then set the copy's prototype).
 */
const Blackboard = z.custom<Record<string, unknown>>(
  (value) => typeof value === "object" && value !== null && !Array.isArray(value),
  "a blackboard must be a JSON object",
);

/** Options of the NATS store. */
export interface NatsBlackboardStoreOptions {
  /** Longest one call (bucket creation included) may take. Default DEFAULT_BLACKBOARD_TIMEOUT_MS (3 s). */
  timeoutMs?: number;
}

/**
 * Blackboards in NATS KV. The NATS connection is the caller's: `close()`
 * leaves it open. A value that is not a JSON object is quarantined as every
 * KV value here is (JsonKv: a dead letter on `conclave.dlq.kv`, the value
 * left in place) and its reads fail with corrupt_value.
 */
export class NatsBlackboardStore implements BlackboardStore {
  readonly backend = "nats";

  private constructor(
    private readonly kv: JsonKv<typeof Blackboard>,
    private readonly timeoutMs: number,
  ) {}

  /** Opens (creating if missing) the bucket; an "unavailable" BlackboardStoreError when NATS refuses or does not answer. */
  static async open(nc: NatsConnection, options: NatsBlackboardStoreOptions = {}): Promise<NatsBlackboardStore> {
    const timeoutMs = options.timeoutMs ?? DEFAULT_BLACKBOARD_TIMEOUT_MS;
    const what = `nats blackboard: cannot open KV bucket ${BLACKBOARD_BUCKET}`;
    const kv = await withDeadline(
      timeoutMs,
      async () => {
        try {
          // history 1: a blackboard is replaced whole, earlier versions are of no use.
          return await JsonKv.open(nc, BLACKBOARD_BUCKET, Blackboard, {
            history: 1,
            maxValueSize: MAX_BLACKBOARD_BYTES,
            versioned: false, // the blackboard's keys are the recipe's: no reserved `v` among them
          });
        } catch (error) {
          throw new BlackboardStoreError("unavailable", "nats", `${what}: ${scrubbed(error)}`, { cause: error });
        }
      },
      () => noAnswer("nats", what, timeoutMs),
    );
    return new NatsBlackboardStore(kv, timeoutMs);
  }

  async load(sessionId: string): Promise<Record<string, unknown> | null> {
    checkSessionId("nats", sessionId);
    return this.#call(`load of session ${sessionId}`, sessionId, async () => {
      try {
        return (await this.kv.get(sessionId))?.value ?? null;
      } catch (error) {
        if (error instanceof CorruptValueError) throw corrupt("nats", sessionId, error.message, error);
        throw error;
      }
    });
  }

  async save(sessionId: string, blackboard: Record<string, unknown>): Promise<void> {
    checkSessionId("nats", sessionId);
    // Checked here; JsonKv.put serializes it again to the same text (JSON.stringify is deterministic).
    encodeBlackboard("nats", sessionId, blackboard);
    await this.#call(`save of session ${sessionId}`, sessionId, () => this.kv.put(sessionId, blackboard));
  }

  async close(): Promise<void> {
    // The connection belongs to whoever opened the store.
  }

  async #call<T>(what: string, sessionId: string, work: () => Promise<T>): Promise<T> {
    return withDeadline(
      this.timeoutMs,
      async () => {
        try {
          return await work();
        } catch (error) {
          if (error instanceof BlackboardStoreError) throw error;
          throw new BlackboardStoreError("unavailable", "nats", `nats blackboard ${what} failed: ${scrubbed(error)}`, {
            cause: error,
            sessionId,
          });
        }
      },
      () => noAnswer("nats", `nats blackboard ${what}`, this.timeoutMs),
    );
  }
}
