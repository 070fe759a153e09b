import type { KV } from "@nats-io/kv";
import { Kvm } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/nats-core";
import { buckets } from "../bus/subjects.ts";

const decoder = new TextDecoder();
const encoder = new TextEncoder();

interface SessionRecord {
  last_turn_id: number;
}

/**
 * Per-session state shared by every runner, in a JetStream KV bucket. Turn ids
 * are handed out with compare-and-set, so they continue across runner
 * restarts and are never given twice, even by two runners at once.
 */
export class SessionStore {
  readonly #kv: KV;
  private constructor(kv: KV) {
    this.#kv = kv;
  }

  static async open(nc: NatsConnection): Promise<SessionStore> {
    const kv = await new Kvm(nc).create(buckets.sessions, { history: 1 });
    return new SessionStore(kv);
  }

  /** The last turn id given out for the session (0 for a new session). */
  async lastTurnId(sessionId: string): Promise<number> {
    const entry = await this.#kv.get(sessionId);
    return entry && entry.operation === "PUT"
      ? (JSON.parse(decoder.decode(entry.value)) as SessionRecord).last_turn_id
      : 0;
  }

  /** Reserves the session's next turn id. */
  async nextTurnId(sessionId: string): Promise<number> {
    for (let attempt = 0; attempt < 50; attempt++) {
      const entry = await this.#kv.get(sessionId);
      if (entry?.operation !== "PUT") {
        try {
          await this.#kv.create(sessionId, encoder.encode(JSON.stringify({ last_turn_id: 1 } satisfies SessionRecord)));
          return 1;
        } catch {
          continue; // another runner created it first
        }
      }
      const next = (JSON.parse(decoder.decode(entry.value)) as SessionRecord).last_turn_id + 1;
      try {
        await this.#kv.update(
          sessionId,
          encoder.encode(JSON.stringify({ last_turn_id: next } satisfies SessionRecord)),
          entry.revision,
        );
        return next;
      } catch {
        // lost the race: read again
      }
    }
    throw new Error(`could not reserve a turn id for session ${sessionId}: too much contention`);
  }
}
