import { DeliverPolicy, type JetStreamClient, type JetStreamManager, StorageType } from "@nats-io/jetstream";
import { type KV, Kvm } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/nats-core";
import { encodeRecord } from "../bus/codec.ts";
import { buckets, streams, subjects } from "../bus/subjects.ts";
import { parseRecord } from "../contracts/format.ts";
import { orderedConsumer, releaseConsumer } from "../eventlog/consumers.ts";
import { ensureStream, PULL_EXPIRES_MS } from "../eventlog/streams.ts";
import { configuredReplicas, patientlySetUp } from "../nats/replicas.ts";
import { ScheduleEvent } from "./intent.ts";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Fire claims are kept a week: long past any due time a runner could still be deciding about. */
const CLAIM_TTL_MS = 7 * 24 * 3_600_000;

/** The schedule log (stream CONCLAVE_SCHEDULES, one subject per intent) and the fire claims (KV). */
export class ScheduleLog {
  private constructor(
    private readonly js: JetStreamClient,
    readonly jsm: JetStreamManager,
    private readonly claims: KV,
  ) {}

  /** Creates the stream and the claims bucket when missing. */
  static async open(nc: NatsConnection, js: JetStreamClient, jsm: JetStreamManager): Promise<ScheduleLog> {
    await ensureStream(jsm, {
      name: streams.schedules,
      subjects: [subjects.allScheduleLog],
      storage: StorageType.File,
    });
    const claims = await patientlySetUp(() =>
      new Kvm(nc).create(buckets.scheduleFires, { ttl: CLAIM_TTL_MS, history: 1, replicas: configuredReplicas() }),
    );
    return new ScheduleLog(js, jsm, claims);
  }

  /** Appends an event; `expectNew` makes it fail when the intent's subject already has one (creation). */
  async append(event: ScheduleEvent, expectNew = false): Promise<number> {
    const id = event.kind === "created" ? event.intent.id : event.id;
    const ack = await this.js.publish(subjects.scheduleLog(id), encodeRecord(event), {
      ...(expectNew ? { expect: { lastSubjectSequence: 0 } } : {}),
    });
    return ack.seq;
  }

  /** The log's last sequence (0 when empty). */
  async lastSeq(): Promise<number> {
    return (await this.jsm.streams.info(streams.schedules)).state.last_seq;
  }

  /**
   * Claims `key` (`<intent>.<due>`, or with a suffix) for this runner: true
   * for exactly one caller across all runners (a KV create-if-absent).
   */
  async claim(key: string, runner: string): Promise<boolean> {
    try {
      await this.claims.create(key, encoder.encode(runner));
      return true;
    } catch {
      return false;
    }
  }

  /** Reads the whole log, then follows it, until `signal` aborts. */
  async follow(onEvent: (event: ScheduleEvent | null, seq: number) => void, signal: AbortSignal): Promise<void> {
    const consumer = await orderedConsumer(this.js, streams.schedules, { deliver_policy: DeliverPolicy.All });
    const messages = await consumer.consume({ expires: PULL_EXPIRES_MS });
    const stop = () => void messages.stop();
    signal.addEventListener("abort", stop, { once: true });
    if (signal.aborted) stop();
    try {
      for await (const msg of messages) {
        const parsed = (() => {
          try {
            return parseRecord(ScheduleEvent, JSON.parse(decoder.decode(msg.data)), `schedule log entry ${msg.seq}`);
          } catch {
            return null;
          }
        })();
        // A malformed entry is passed as null (skipped, but counted): one bad write must not stop every schedule.
        onEvent(parsed?.success ? parsed.data : null, msg.seq);
      }
    } finally {
      await releaseConsumer(consumer);
    }
  }
}
