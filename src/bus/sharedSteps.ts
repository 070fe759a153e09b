import { createHash } from "node:crypto";
import { type KV, type KvEntry, Kvm } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/nats-core";
import { z } from "zod";
import { messageOf, singleLine } from "../errors.ts";
import { checkBucketReplicas, configuredReplicas } from "../nats/replicas.ts";
import { HandlerError } from "./errors.ts";
import { buckets } from "./subjects.ts";

/** How long a step's answer (or claim) is kept: the bucket's max_age. A takeover asks again within seconds. */
export const STEP_REPLY_TTL_MS = 60_000;
/**
 * The biggest answer kept for another worker, in bytes. A bigger one is not stored (its claim is
 * dropped): a worker other than the one that ran it, asked again, runs it again. Agent and council
 * answers are a few kilobytes; this keeps one KV value well under the server's max_payload.
 */
export const MAX_SHARED_REPLY_BYTES = 256 * 1024;
/**
 * A claim not renewed for this long is its holder's death: another worker asked the step takes it
 * over and runs it again (the one repeat that cannot be avoided: the dead worker's call is lost).
 */
export const CLAIM_LEASE_MS = 2_000;
/** How often the worker running a step renews its claim. */
const RENEW_EVERY_MS = 500;
/** After the bucket could not be opened (no rights, no JetStream), steps run unshared this long before a retry. */
const REOPEN_AFTER_MS = 30_000;

const StepRecord = z.discriminatedUnion("state", [
  /** `worker` runs the step now; its claim is renewed every RENEW_EVERY_MS. */
  z.object({ state: z.literal("running"), worker: z.string() }),
  /** The step's answer, base64: the exact bytes its worker replied. */
  z.object({ state: z.literal("done"), reply: z.string() }),
]);
type StepRecord = z.infer<typeof StepRecord>;

/** What waiting on another worker's claim ended with. */
type Waited = { reply: Uint8Array } | { free: true } | { stale: number };

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const encode = (record: StepRecord): Uint8Array => encoder.encode(JSON.stringify(record));

/**
 * Steps shared by every worker of a service, in the `conclave_step_replies` KV bucket: a step
 * asked of a second worker (a runner that took a turn over, or resent a request to a live worker)
 * is not run again there. The first worker to ask claims the step (a KV create: compare-and-set),
 * renews its claim while the work runs, and stores the answer; a worker that loses the claim
 * watches the key until the answer appears, the claim is dropped (a failure: not kept, so it
 * runs), or the claim goes stale (its holder died: it takes the step over, with a compare-and-set,
 * so only one worker does). A claim is stale CLAIM_LEASE_MS after the server stored its last
 * renewal (or after this worker saw it, if sooner): a waiter need not sit out a whole lease after
 * it arrives. A worker whose clock runs more than a lease ahead of the server's may take over a
 * live claim: a repeated call, never a wrong answer. Without the bucket (no rights, JetStream
 * down) steps run as they come, joined only on their own worker.
 */
export class SharedSteps {
  #kv: Promise<KV | null> | null = null;
  #failedAt = Number.NEGATIVE_INFINITY;

  /**
   * @param nc the worker's connection
   * @param worker the worker's identity, written in its claims (for operators reading the bucket)
   * @param warn told once per failed open of the bucket
   */
  constructor(
    private readonly nc: NatsConnection,
    private readonly worker: string,
    private readonly warn: (message: string) => void = () => {},
  ) {}

  /** Opens the bucket now rather than at the first step. */
  open(): this {
    void this.#bucket();
    return this;
  }

  /**
   * The answer of step `key`: another worker's, given or awaited, else `work`'s (stored once it
   * succeeds and is small enough). Waiting on another worker ends by `waitMs` with a `timeout`.
   */
  async run(key: string, work: () => Promise<Uint8Array>, waitMs: number): Promise<Uint8Array> {
    const kv = await this.#bucket();
    if (!kv) return work();
    const at = kvKeyOf(key);
    const until = Date.now() + waitMs;
    for (;;) {
      const claimed = await this.#claim(kv, at);
      if (claimed === "unshared") return work();
      if (claimed !== null) return this.#hold(kv, at, claimed, work);
      let waited: Waited;
      try {
        waited = await this.#await(kv, at, key, until);
      } catch (error) {
        if (error instanceof HandlerError) throw error;
        return work(); // the key cannot be watched (KV down): run unshared rather than fail the step
      }
      if ("reply" in waited) return waited.reply;
      if ("stale" in waited) {
        // Its holder died: one worker takes the step over (the compare-and-set), the others wait on.
        const taken = await kv.update(at, encode(this.#claimRecord()), waited.stale).catch(() => null);
        if (taken !== null) return this.#hold(kv, at, taken, work);
      }
    }
  }

  #claimRecord(): StepRecord {
    return { state: "running", worker: this.worker };
  }

  /** The claim's revision; null when another worker holds the step; "unshared" when KV cannot tell. */
  async #claim(kv: KV, at: string): Promise<number | null | "unshared"> {
    try {
      return await kv.create(at, encode(this.#claimRecord()));
    } catch {
      // Taken, or KV failed: only a key that is there now is another worker's claim.
      const entry = await kv.get(at).catch(() => undefined);
      if (entry === undefined) return "unshared";
      return entry?.operation === "PUT" ? null : this.#claimAgain(kv, at);
    }
  }

  /** A key deleted between our create and our read: one more try, then run unshared. */
  async #claimAgain(kv: KV, at: string): Promise<number | null | "unshared"> {
    return kv.create(at, encode(this.#claimRecord())).catch(() => null);
  }

  /** Runs the step holding its claim (renewed meanwhile); its answer stored, its failure's claim dropped. */
  async #hold(kv: KV, at: string, revision: number, work: () => Promise<Uint8Array>): Promise<Uint8Array> {
    let current = revision;
    let renewing = false;
    const renew = setInterval(() => {
      if (renewing) return;
      renewing = true;
      kv.update(at, encode(this.#claimRecord()), current).then(
        (next) => {
          current = next;
          renewing = false;
        },
        // Taken over (this worker stalled past the lease) or KV down: stop renewing, finish the work.
        () => clearInterval(renew),
      );
    }, RENEW_EVERY_MS);
    renew.unref();
    let reply: Uint8Array;
    try {
      reply = await work();
    } catch (error) {
      clearInterval(renew);
      // Failures are not kept: a worker waiting on the step sees the key go and runs it.
      await kv.delete(at).catch(() => {});
      throw error;
    }
    clearInterval(renew);
    // A big answer is not kept for other workers (see MAX_SHARED_REPLY_BYTES): its claim goes.
    const stored =
      reply.length <= MAX_SHARED_REPLY_BYTES
        ? kv.put(at, encode({ state: "done", reply: Buffer.from(reply).toString("base64") }))
        : kv.delete(at);
    await stored.catch(() => {});
    return reply;
  }

  /** Watches another worker's claim on the step until it answers, drops it, goes stale or `until` passes. */
  async #await(kv: KV, at: string, key: string, until: number): Promise<Waited> {
    const watch = await kv.watch({ key: at });
    const entries = watch[Symbol.asyncIterator]();
    try {
      // Read once as the watch starts: a key gone already (expired, dropped) is free to claim.
      let staleAt = Date.now() + CLAIM_LEASE_MS;
      let revision = 0;
      if ((await kv.get(at).catch(() => null))?.operation !== "PUT") return { free: true };
      let next = entries.next();
      for (;;) {
        const now = Date.now();
        if (now >= until) throw new HandlerError("timeout", `step ${key}: another worker's answer did not come`);
        if (revision > 0 && now >= staleAt) return { stale: revision };
        const result = await withinMs(next, Math.min(until, revision > 0 ? staleAt : until) - now);
        if (result === null) continue;
        if (result.done) return { free: true };
        next = entries.next();
        const entry: KvEntry = result.value;
        if (entry.operation !== "PUT") return { free: true };
        const record = StepRecord.safeParse(safeJson(entry.value));
        // Not ours to read (a corrupt value): run the step rather than wait on it.
        if (!record.success) return { free: true };
        if (record.data.state === "done") return { reply: Buffer.from(record.data.reply, "base64") };
        revision = entry.revision;
        // Stale a lease after the server stored this renewal, or after we saw it, whichever comes first.
        staleAt = Math.min(entry.created.getTime(), Date.now()) + CLAIM_LEASE_MS;
      }
    } finally {
      watch.stop();
    }
  }

  #bucket(): Promise<KV | null> {
    if (this.#kv) return this.#kv;
    if (Date.now() - this.#failedAt < REOPEN_AFTER_MS) return Promise.resolve(null);
    this.#kv = (async () => {
      const replicas = configuredReplicas();
      const kv = await new Kvm(this.nc).create(buckets.stepReplies, { history: 1, ttl: STEP_REPLY_TTL_MS, replicas });
      await checkBucketReplicas(kv, buckets.stepReplies, replicas);
      return kv;
    })().catch((error: unknown) => {
      this.#kv = null;
      this.#failedAt = Date.now();
      this.warn(
        `step answers are not shared with other workers (${buckets.stepReplies}): ${singleLine(messageOf(error))}`,
      );
      return null;
    });
    return this.#kv;
  }
}

/** A step's key in KV: itself when it is a valid key, else its hash. */
export function kvKeyOf(key: string): string {
  return /^[-\w=]+(\.[-\w=]+)*$/.test(key) ? key : `h.${createHash("sha256").update(key).digest("hex")}`;
}

/** The promise's result, or null when `ms` pass first. */
async function withinMs<T>(promise: Promise<T>, ms: number): Promise<T | null> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const elapsed = new Promise<null>((resolve) => {
    timer = setTimeout(() => resolve(null), Math.max(0, ms));
  });
  try {
    return await Promise.race([promise, elapsed]);
  } finally {
    clearTimeout(timer);
  }
}

function safeJson(data: Uint8Array): unknown {
  try {
    return JSON.parse(decoder.decode(data));
  } catch {
    return undefined;
  }
}
