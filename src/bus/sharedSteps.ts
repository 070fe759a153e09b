import { createHash } from "node:crypto";
import { type KV, type KvEntry, Kvm } from "@nats-io/kv";
import { headers, type MsgHdrs, type NatsConnection } from "@nats-io/nats-core";
import { z } from "zod";
import { parseRecord } from "../contracts/format.ts";
import { messageOf, singleLine } from "../errors.ts";
import { checkBucketReplicas, configuredReplicas } from "../nats/replicas.ts";
import { encodeRecord } from "./codec.ts";
import { HandlerError } from "./errors.ts";
import { KnownSteps } from "./knownSteps.ts";
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
/**
 * A step no other worker was seen to hold runs at once, and is claimed only if it still runs this
 * long after: a step asked again on another worker is asked no sooner than a runner's takeover (its
 * liveness, 1.5 s) or a resend (a share of the request's deadline, 2.5 s by default), when its
 * claim is there. A step answered sooner is not claimed: its answer is stored after the reply.
 */
export const CLAIM_AFTER_MS = 200;
/** After the bucket could not be opened (no rights, no JetStream), steps run unshared this long before a retry. */
const REOPEN_AFTER_MS = 30_000;

const StepRecord = z.discriminatedUnion("state", [
  /** `worker` runs the step now; its claim is renewed every RENEW_EVERY_MS. */
  z.object({ state: z.literal("running"), worker: z.string() }),
  /** The step's answer, base64: the exact bytes its worker replied. */
  z.object({ state: z.literal("done"), reply: z.string() }),
]);
type StepRecord = z.infer<typeof StepRecord>;

/** A claim due later: its revision once made (null: none held), `tried` once it was attempted. */
interface LaterClaim {
  revision: Promise<number | null>;
  cancel: () => void;
  tried: boolean;
}

/** What waiting on another worker's claim ended with. */
type Waited = { reply: Uint8Array } | { free: true } | { stale: number };

const decoder = new TextDecoder();
const encode = (record: StepRecord): Uint8Array => encodeRecord(record);

/**
 * Steps shared by every worker of a service, in the `conclave_step_replies` KV bucket: a step
 * asked of a second worker (a runner that took a turn over, or resent a request to a live worker)
 * is not run again there, and no step waits on KV before its work or its reply. Each worker follows
 * the bucket's keys (src/bus/knownSteps.ts). A step whose key it has not seen runs at once; if it
 * still runs CLAIM_AFTER_MS later it is claimed (a KV create: compare-and-set), the claim renewed
 * while the work runs; its answer is stored once the reply is sent (a failure's claim dropped).
 * A step whose key it has seen, or any step before it caught up, is claimed first: a worker that
 * loses the claim watches the key until the answer appears, the claim is dropped (a failure: not
 * kept, so it runs), or the claim goes stale (its holder died: it takes the step over, with a
 * compare-and-set, so only one worker does). A claim is stale CLAIM_LEASE_MS after the server
 * stored its last renewal (or after this worker saw it, if sooner): a waiter need not sit out a
 * whole lease after it arrives. A worker whose clock runs more than a lease ahead of the server's
 * may take over a live claim: a repeated call, never a wrong answer. Without the bucket (no rights,
 * JetStream down) steps run as they come, joined only on their own worker.
 */
export class SharedSteps {
  #kv: Promise<KV | null> | null = null;
  #failedAt = Number.NEGATIVE_INFINITY;
  /** The bucket's keys seen here; null while not followed (every step is then claimed first). */
  #known: KnownSteps | null = null;
  #following: Promise<void> | null = null;
  #unfollowedAt = Number.NEGATIVE_INFINITY;
  #closed = false;

  /**
   * @param nc the worker's connection
   * @param worker the worker's identity, written in its claims (for operators reading the bucket)
   * @param warn told once per failed open of the bucket, or of the follow of its keys
   */
  constructor(
    private readonly nc: NatsConnection,
    private readonly worker: string,
    private readonly warn: (message: string) => void = () => {},
  ) {}

  /** Opens the bucket, and follows its keys, now rather than at the first step. */
  open(): this {
    void this.#bucket().then((kv) => kv && this.#follow(kv));
    return this;
  }

  /** Stops following the bucket's keys (steps under way finish). */
  close(): void {
    this.#closed = true;
    this.#known?.stop();
    this.#known = null;
  }

  /**
   * Whether step `key`, asked here now, is claimed before it runs: another worker was seen to
   * claim or answer it, or this worker does not follow the bucket's keys (yet).
   * @internal tests
   */
  claimsFirst(key: string): boolean {
    return this.#known?.mayBeTaken(kvKeyOf(key)) ?? true;
  }

  /**
   * The answer of step `key`: another worker's, given or awaited, else `work`'s (stored once it
   * succeeds and is small enough). Waiting on another worker ends by `waitMs` with a `timeout`.
   */
  async run(key: string, work: () => Promise<Uint8Array>, waitMs: number): Promise<Uint8Array> {
    const kv = await this.#bucket();
    if (!kv) return work();
    const at = kvKeyOf(key);
    if (!this.#known) void this.#follow(kv);
    // No worker was seen to claim or answer it: it runs now, claimed only if it takes a while.
    else if (!this.#known.mayBeTaken(at)) return this.#hold(kv, at, this.#claimLater(kv, at), work);
    const until = Date.now() + waitMs;
    for (;;) {
      const claimed = await this.#claim(kv, at);
      if (claimed === "unshared") return work();
      if (claimed !== null) return this.#hold(kv, at, Promise.resolve(claimed), work);
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
        if (taken !== null) return this.#hold(kv, at, Promise.resolve(taken), work);
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

  /**
   * A claim made CLAIM_AFTER_MS from now, unless `cancel` comes first: its revision, or null when
   * none is held (`tried` tells a claim lost, or KV down, from one never made).
   */
  #claimLater(kv: KV, at: string): LaterClaim {
    const later: LaterClaim = { revision: Promise.resolve(null), cancel: () => {}, tried: false };
    later.revision = new Promise<number | null>((resolve) => {
      const due = setTimeout(() => {
        later.tried = true;
        // Taken (another worker began it at the same time) or KV down: the work goes on unshared.
        resolve(kv.create(at, encode(this.#claimRecord())).catch(() => null));
      }, CLAIM_AFTER_MS);
      later.cancel = () => {
        clearTimeout(due);
        resolve(null);
      };
    });
    return later;
  }

  /**
   * Runs the step, its claim (given, or to come) renewed meanwhile. Its answer goes back at once;
   * then, off the reply's path, a held claim is settled: the answer stored, or the claim dropped (a
   * failure, or an answer too big to keep).
   */
  async #hold(
    kv: KV,
    at: string,
    claim: Promise<number> | LaterClaim,
    work: () => Promise<Uint8Array>,
  ): Promise<Uint8Array> {
    const claimed = claim instanceof Promise ? claim : claim.revision;
    let done = false;
    let renew: ReturnType<typeof setInterval> | undefined;
    void claimed.then((revision) => {
      if (revision === null || done) return;
      let current = revision;
      let renewing = false;
      renew = setInterval(() => {
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
    });
    const settle = (reply: Uint8Array | null) => {
      done = true;
      clearInterval(renew);
      if (!(claim instanceof Promise)) claim.cancel();
      // After the reply is sent (this runs once the caller's awaits have): the requester never waits on KV.
      setImmediate(() => {
        void claimed.then((revision) => {
          const kept = reply !== null && reply.length <= MAX_SHARED_REPLY_BYTES;
          const answer = kept ? encode({ state: "done", reply: Buffer.from(reply).toString("base64") }) : null;
          // Never claimed: answered before its claim was due (kept), or its claim lost or not made (not ours to write).
          if (revision === null && (claim instanceof Promise || claim.tried || !answer)) return;
          clearInterval(renew);
          // Failures are not kept, nor big answers (MAX_SHARED_REPLY_BYTES): a worker waiting sees the key go.
          this.#write(at, answer);
        });
      });
    };
    try {
      const reply = await work();
      settle(reply);
      return reply;
    } catch (error) {
      settle(null);
      throw error;
    }
  }

  /**
   * Stores the step's answer, or drops its key (null), with a plain publish on the bucket's subject:
   * JetStream stores it as a KV put or delete; nothing waits for its ack (none is asked for). Lost
   * (JetStream down), a re-ask on another worker runs the step again.
   */
  #write(at: string, answer: Uint8Array | null): void {
    const subject = `$KV.${buckets.stepReplies}.${at}`;
    try {
      if (answer) this.nc.publish(subject, answer);
      else this.nc.publish(subject, new Uint8Array(), { headers: deleteMarker() });
    } catch {
      // The connection is closed or draining: the worker is stopping, and its answers go with it.
    }
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
        const record = parseRecord(StepRecord, safeJson(entry.value), `step ${key}`);
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

  /** Follows the bucket's keys; after the follow fails or ends, again no sooner than REOPEN_AFTER_MS. */
  #follow(kv: KV): Promise<void> {
    if (this.#following || this.#closed || Date.now() - this.#unfollowedAt < REOPEN_AFTER_MS) {
      return this.#following ?? Promise.resolve();
    }
    const lost = () => {
      this.#known = null;
      this.#following = null;
      this.#unfollowedAt = Date.now();
    };
    this.#following = KnownSteps.follow(kv, STEP_REPLY_TTL_MS, lost).then(
      (known) => {
        if (this.#closed) known.stop();
        else this.#known = known;
      },
      (error: unknown) => {
        lost();
        this.warn(
          `every step is claimed before it runs: ${buckets.stepReplies}'s keys cannot be followed: ${singleLine(messageOf(error))}`,
        );
      },
    );
    return this.#following;
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

/** The headers of a KV delete (as `kv.delete` writes them). */
function deleteMarker(): MsgHdrs {
  const marker = headers();
  marker.set("KV-Operation", "DEL");
  return marker;
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
