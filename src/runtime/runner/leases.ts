import type { NatsConnection } from "@nats-io/nats-core";
import { z } from "zod";
import { JsonKv } from "../../bus/jsonKv.ts";
import { buckets } from "../../bus/subjects.ts";
import { isConclaveError } from "../../errors.ts";

const Lease = z.object({ runner: z.string() });

/** How long a lease lives without renewal. A dead runner's sessions are free again after this. */
export const LEASE_TTL_MS = 6_000;

/**
 * One runner owns a session at a time: a lease in the `conclave_owners` KV
 * bucket, whose entries expire LEASE_TTL_MS after their last renewal. A runner
 * renews its leases while it lives; when it dies they lapse and another runner
 * may take the session over.
 */
export class SessionLeases {
  readonly #owned = new Set<string>();
  #timer: NodeJS.Timeout | undefined;

  private constructor(
    private readonly leases: JsonKv<typeof Lease>,
    readonly runner: string,
  ) {}

  static async open(nc: NatsConnection, runner: string): Promise<SessionLeases> {
    const ownership = new SessionLeases(await JsonKv.open(nc, buckets.owners, Lease, { ttl: LEASE_TTL_MS }), runner);
    ownership.#timer = setInterval(() => void ownership.#renew(), LEASE_TTL_MS / 3);
    ownership.#timer.unref();
    return ownership;
  }

  /** True when this runner owns the session (now or already). */
  async acquire(sessionId: string): Promise<boolean> {
    if (this.#owned.has(sessionId)) return true;
    if (await this.leases.create(sessionId, { runner: this.runner })) {
      this.#owned.add(sessionId);
      return true;
    }
    const holder = await this.leases.get(sessionId).catch(async (error: unknown) => {
      if (!isConclaveError(error, "corrupt_value")) throw error;
      // A damaged lease is nobody's (it was reported on conclave.dlq.kv): take the session rather than wait for its TTL.
      await this.leases.put(sessionId, { runner: this.runner });
      return { value: { runner: this.runner } };
    });
    if (holder?.value.runner === this.runner) {
      this.#owned.add(sessionId);
      return true;
    }
    return false;
  }

  owns(sessionId: string): boolean {
    return this.#owned.has(sessionId);
  }

  async release(sessionId: string): Promise<void> {
    if (!this.#owned.delete(sessionId)) return;
    const holder = await this.leases.get(sessionId);
    if (holder?.value.runner === this.runner) await this.leases.delete(sessionId);
  }

  async #renew(): Promise<void> {
    for (const sessionId of this.#owned) {
      try {
        // Compare-and-set: if another runner took the session after our lease lapsed, it is theirs.
        const kept = await this.leases.update(sessionId, (current) =>
          current === null || current.runner === this.runner ? { runner: this.runner } : null,
        );
        if (kept?.runner !== this.runner) this.#owned.delete(sessionId);
      } catch {
        // NATS may be down: the next renewal tries again; the lease outlives a short outage.
      }
    }
  }

  async close(): Promise<void> {
    clearInterval(this.#timer);
    await Promise.allSettled([...this.#owned].map((sessionId) => this.release(sessionId)));
  }
}
