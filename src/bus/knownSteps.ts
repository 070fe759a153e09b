import type { KV } from "@nats-io/kv";

/**
 * The keys of the step answers bucket (src/bus/sharedSteps.ts) a worker has
 * seen, kept by following the bucket: headers only (no answers travel), every
 * claim, renewal, answer and drop, each key forgotten `ttlMs` after its last
 * write (the bucket's max_age; expiries send nothing). It tells a worker, with
 * no round trip, whether a step it is asked may already be claimed or answered
 * by another worker: one it has not seen runs at once. A key written a moment
 * ago may not have arrived yet: a re-ask comes seconds after its first ask (a
 * takeover, a resend), long after its claim has.
 */
export class KnownSteps {
  /** Key → when it is forgotten (ms); in the order of their last writes, so the first is the next to go. */
  readonly #seen = new Map<string, number>();
  /** True once the bucket's keys present when the follow began have all arrived. */
  #caughtUp = false;
  #stopped = false;
  readonly #stop: () => void;

  private constructor(
    private readonly ttlMs: number,
    stop: () => void,
  ) {
    this.#stop = stop;
  }

  /**
   * Follows `kv`'s keys; `onEnd` is told when the follow ends other than by `stop` (the
   * bucket or the connection went). Until it has caught up, every key may be taken.
   */
  static async follow(kv: KV, ttlMs: number, onEnd: () => void): Promise<KnownSteps> {
    const watch = await kv.watch({ headers_only: true });
    const known = new KnownSteps(ttlMs, () => watch.stop());
    // The consumer exists now: an empty bucket has no earlier keys to wait for, later writes all arrive.
    const empty = await kv.status().then(
      (status) => status.values === 0,
      () => false,
    );
    if (empty) known.#caughtUp = true;
    void (async () => {
      for await (const entry of watch) {
        // The last of the keys present at the start (nothing pending after it), or any write after them.
        if (entry.isUpdate || entry.delta === 0) known.#caughtUp = true;
        known.#seen.delete(entry.key);
        if (entry.operation === "PUT") known.#seen.set(entry.key, Date.now() + known.ttlMs);
      }
    })()
      .catch(() => {})
      .finally(() => {
        known.#caughtUp = false;
        if (!known.#stopped) onEnd();
      });
    return known;
  }

  /** Whether another worker may hold or have answered `key`: it was seen, or the follow has not caught up. */
  mayBeTaken(key: string): boolean {
    if (!this.#caughtUp) return true;
    const now = Date.now();
    for (const [seen, forgetAt] of this.#seen) {
      if (forgetAt > now) break;
      this.#seen.delete(seen);
    }
    return this.#seen.has(key);
  }

  /** Stops following. */
  stop(): void {
    this.#stopped = true;
    this.#caughtUp = false;
    this.#stop();
  }
}
