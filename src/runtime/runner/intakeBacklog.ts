import type { NatsConnection } from "@nats-io/nats-core";
import { subjects } from "../../bus/subjects.ts";
import { decodeMessage } from "../../bus/wire.ts";
import { TurnEnded } from "../../contracts/turn.ts";
import { turnKey } from "../../contracts/turnKey.ts";
import type { Admission, AdmissionPreview } from "./admission.ts";

/**
 * How long a turn this intake stored is counted while no runner has been seen to take or end it. Its end
 * is told on core NATS (`conclave.turn.ended`), which may be lost; a turn the count forgets early only
 * lets one more in.
 */
export const UNSEEN_TTL_MS = 120_000;

/**
 * How long a turn seen at a runner before its intake heard its WAL write answered is remembered: the
 * runner's delivery can beat the write's answer back to the intake, and the late `stored` must not count it.
 */
const EARLY_SEEN_TTL_MS = 10_000;

/**
 * Admission at the intake, for bursts. A runner's own queue (`admission.ts`) counts the turns the WAL has
 * delivered to it; in a burst the intake stores hundreds before the first is delivered, and each was told
 * `running`. This counts, besides the runner's own, the turns this intake admitted and stored that no
 * runner has been seen with yet: taken here (`seen`), or ended anywhere (`seen`, from the turn-ended
 * broadcast), or UNSEEN_TTL_MS old. Bookkeeping only, no read of JetStream: a submission never waits on
 * the count, and an election cannot stall it.
 *
 * A submission that the preview admits holds its place (`reserved`) until it is stored or given up on,
 * so the submissions of a burst, handled concurrently, see each other.
 */
export class IntakeBacklog {
  /** Admitted, not stored (or given up on) yet. */
  #reserved = 0;
  /** Stored here, not seen taken or ended yet: key `<session>.<turn>` → when stored (ms). */
  readonly #unseen = new Map<string, number>();
  /** Seen at a runner (or ended) and not stored here, yet: key → when seen (ms). */
  readonly #seenEarly = new Map<string, number>();

  constructor(
    private readonly admission: Admission,
    private readonly ttlMs = UNSEEN_TTL_MS,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Turns counted that the runner's own queue does not hold: admitted or stored here, not yet taken. */
  get unseen(): number {
    this.#expire();
    return this.#reserved + this.#unseen.size;
  }

  /**
   * What a new turn of the session would get now (`patienceMs`: its submitter's, see Admission.preview);
   * one not refused holds its place until `stored` or `withdrawn`.
   */
  preview(sessionId: string, tenant?: string, patienceMs?: number): AdmissionPreview {
    const decided = this.admission.preview(sessionId, tenant, this.unseen, patienceMs);
    if (decided.state !== "busy") this.#reserved += 1;
    return decided;
  }

  /** An admitted turn is stored in the WAL: counted until a runner is seen with it. */
  stored(sessionId: string, turnId: number): void {
    this.#reserved = Math.max(0, this.#reserved - 1);
    const key = turnKey(sessionId, turnId);
    if (this.#seenEarly.delete(key)) return; // a runner had it before the write's answer came back
    this.#unseen.set(key, this.now());
  }

  /** An admitted turn was not stored after all: its place is free. */
  withdrawn(): void {
    this.#reserved = Math.max(0, this.#reserved - 1);
  }

  /** A runner has the turn (delivered here), or it ended (anywhere): the runners' own count has it now, or nobody's. */
  seen(sessionId: string, turnId: number): void {
    const key = turnKey(sessionId, turnId);
    if (this.#unseen.delete(key)) return;
    // Not stored here, or not yet: remembered a while, in case this intake's answer from the WAL is late.
    this.#seenEarly.delete(key);
    this.#seenEarly.set(key, this.now());
    dropOlder(this.#seenEarly, this.now() - EARLY_SEEN_TTL_MS);
  }

  /**
   * Follows every runner's turn ends (`conclave.turn.ended`, core NATS): a turn this intake stored that ran
   * elsewhere stops counting once it ends. Returns the unsubscribe.
   */
  followEnds(nc: NatsConnection): () => void {
    const subscription = nc.subscribe(subjects.turnEnded, {
      callback: (error, msg) => {
        if (error) return;
        try {
          // Ended, or taken over (then the runner that took it counts it): either way a runner had it.
          const ended = decodeMessage(msg, TurnEnded, "turn end");
          this.seen(ended.session_id, ended.turn_id);
        } catch {
          // Not a turn end: nothing to count.
        }
      },
    });
    return () => subscription.unsubscribe();
  }

  #expire(): void {
    dropOlder(this.#unseen, this.now() - this.ttlMs);
  }
}

/** Drops the entries stamped at or before `oldest`; a map's insertion order is their time order. */
function dropOlder(stamped: Map<string, number>, oldest: number): void {
  for (const [key, at] of stamped) {
    if (at > oldest) break;
    stamped.delete(key);
  }
}
