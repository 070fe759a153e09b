import type { JetStreamClient } from "@nats-io/jetstream";
import type { KvWatchEntry } from "@nats-io/kv";
import type { NatsConnection, QueuedIterator } from "@nats-io/nats-core";
import { z } from "zod";
import { JsonKv } from "../../bus/jsonKv.ts";
import { buckets } from "../../bus/subjects.ts";
import { turnKey } from "../../contracts/turnKey.ts";
import { MAX_TIMER_MS } from "../../deadline.ts";
import { isConclaveError, messageOf } from "../../errors.ts";
import type { TurnStatusStore } from "../../eventlog/turnStatusStore.ts";
import type { Logger } from "../../telemetry/log.ts";
import { resumeSuspended } from "./resume.ts";

const SuspensionRecord = z.object({
  session_id: z.string(),
  turn_id: z.number().int(),
  node: z.string(),
  seq: z.number().int().min(0),
  expires_at: z.number(),
});
type SuspensionRecord = z.infer<typeof SuspensionRecord>;

/**
 * Human nodes' timeouts, with no process holding the run: each suspension
 * with a timeout is a key of the `conclave_suspended` bucket, which every
 * runner watches; each arms a timer, and when it fires resumes the run as
 * timed out. Only one resume wins (the status moves suspended → pending
 * once), so several runners racing, or a person answering at the last
 * moment, resume it once.
 */
export class SuspensionTimers {
  readonly #timers = new Map<string, NodeJS.Timeout>();
  #watch: QueuedIterator<KvWatchEntry> | null = null;

  private constructor(
    private readonly kv: JsonKv<typeof SuspensionRecord>,
    private readonly deps: { js: JetStreamClient; statuses: TurnStatusStore; partitions: number; log: Logger },
  ) {}

  static async start(
    nc: NatsConnection,
    deps: { js: JetStreamClient; statuses: TurnStatusStore; partitions: number; log: Logger },
  ): Promise<SuspensionTimers> {
    const timers = new SuspensionTimers(await JsonKv.open(nc, buckets.suspended, SuspensionRecord), deps);
    timers.#watch = await timers.kv.kv.watch();
    const watch = timers.#watch;
    void (async () => {
      for await (const entry of watch) timers.#seen(entry);
    })().catch((error: unknown) => deps.log.warn(`suspension timeouts: watch ended: ${messageOf(error)}`));
    return timers;
  }

  /** A run suspended at a node that times out at `expires_at`. */
  async add(record: SuspensionRecord): Promise<void> {
    await this.kv.put(`${turnKey(record.session_id, record.turn_id)}`, record);
  }

  /** The run was answered: no timeout any more. */
  async forget(sessionId: string, turnId: number): Promise<void> {
    await this.kv.delete(`${turnKey(sessionId, turnId)}`).catch(() => {});
  }

  #seen(entry: KvWatchEntry): void {
    const key = entry.key;
    clearTimeout(this.#timers.get(key));
    this.#timers.delete(key);
    if (entry.operation !== "PUT") return;
    const parsed = SuspensionRecord.safeParse(entry.json());
    if (!parsed.success) return;
    this.#arm(key, parsed.data);
  }

  #arm(key: string, record: SuspensionRecord): void {
    const wait = Math.max(0, record.expires_at - Date.now());
    const timer = setTimeout(
      () => {
        if (wait > MAX_TIMER_MS) return this.#arm(key, record);
        this.#timedOut(key, record);
      },
      Math.min(wait, MAX_TIMER_MS),
    );
    timer.unref();
    this.#timers.set(key, timer);
  }

  #timedOut(key: string, record: SuspensionRecord): void {
    this.#timers.delete(key);
    resumeSuspended(
      this.deps,
      record.session_id,
      record.turn_id,
      { node: record.node, answer: null, timed_out: true },
      record.seq,
    )
      .then(() => {
        this.deps.log.info(`turn ${key}: nobody answered '${record.node}' in time; resumed as timed out`);
        return this.forget(record.session_id, record.turn_id);
      })
      .catch((error: unknown) => {
        // Another runner (or the person) got there first: nothing to do.
        if (isConclaveError(error) || (error as { code?: string }).code === "conflict") return;
        this.deps.log.warn(`turn ${key}: timing out '${record.node}' failed: ${messageOf(error)}`);
      });
  }

  close(): void {
    this.#watch?.stop();
    for (const timer of this.#timers.values()) clearTimeout(timer);
    this.#timers.clear();
  }
}
