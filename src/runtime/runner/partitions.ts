/**
 * The WAL partitions this runner owns, and their consumers. Ownership
 * follows the live runners (`partitionAssignment.ts`): when one joins or
 * leaves, each runner computes its new share, starts pulling the partitions
 * it gained, and stops pulling those it lost. A lost partition's sessions
 * stay with this runner until their turns here end (the runner then lets
 * them go, `Runner`), so a session's turns never run on two runners at once
 * and stay in order: the session lease (`leases.ts`) decides, and the new
 * owner's deliveries of a session still held here wait for it.
 */
import type { ConsumerMessages, JetStreamClient, JetStreamManager, JsMsg } from "@nats-io/jetstream";
import { runnerConsumer, streams } from "../../bus/subjects.ts";
import { partitionOf } from "../../contracts/partitions.ts";
import { backoffMs, pause } from "../../deadline.ts";
import { messageOf } from "../../errors.ts";
import { PULL_EXPIRES_MS } from "../../eventlog/streams.ts";
import type { Logger } from "../../telemetry/log.ts";
import { partitionsOf } from "./partitionAssignment.ts";

/** How many WAL entries one partition's pull asks for at once. */
const PARTITION_BATCH = 128;

/** How often a runner looks for sessions to hand over (of partitions it lost) whose turns here have ended, while some are left. */
const HAND_OVER_EVERY_MS = 100;
/** How often it looks when none was left at the last look (a safety net: partitions move only when runners do). */
const HAND_OVER_IDLE_EVERY_MS = 5_000;

/** Who lives, and what this runner owns (`SessionLeases`). */
export interface Membership {
  members(): string[];
  whenMembersChanged(handler: () => void): void;
  ownedSessions(): string[];
}

export interface PartitionDeps {
  js: JetStreamClient;
  jsm: JetStreamManager;
  /** The WAL's partition count (`ensureTurnWal`). */
  partitions: number;
  /** This runner's name. */
  runner: string;
  log: Logger;
  /** Each delivery of an owned partition's WAL entry. */
  onMessage: (msg: JsMsg) => void;
  /** Lets a session of a partition this runner no longer owns go, if nothing of it is under way here. */
  handOver: (sessionId: string) => void;
}

export class PartitionOwnership {
  readonly #deps: PartitionDeps;
  readonly #pulling = new Map<number, ConsumerMessages>();
  /** Per partition pulled, the WAL's last stream seq just before this runner began pulling it. */
  readonly #storedThrough = new Map<number, number>();
  #owned = new Set<number>();
  /** Ownership changes one at a time, in the order they were asked for. */
  #changing: Promise<void> = Promise.resolve();
  #closed = false;
  #handOverTimer: NodeJS.Timeout | undefined;

  constructor(deps: PartitionDeps) {
    this.#deps = deps;
  }

  /**
   * Pulls this runner's share among the live runners, follows the share as they join and leave, and
   * hands over (every HAND_OVER_EVERY_MS, and at each change) the sessions of partitions gone elsewhere.
   */
  async start(membership: Membership): Promise<void> {
    /** Offers each session of a partition gone elsewhere; looks again soon while some are left, rarely when none. */
    const handOver = () => {
      clearTimeout(this.#handOverTimer);
      if (this.#closed) return;
      let left = 0;
      for (const sessionId of membership.ownedSessions())
        if (!this.ownsSession(sessionId)) {
          this.#deps.handOver(sessionId);
          left += 1;
        }
      this.#handOverTimer = setTimeout(handOver, left > 0 ? HAND_OVER_EVERY_MS : HAND_OVER_IDLE_EVERY_MS);
      this.#handOverTimer.unref();
    };
    membership.whenMembersChanged(() => void this.follow(membership.members()).then(handOver));
    await this.follow(membership.members());
    handOver();
  }

  /** The WAL's partition count. */
  get partitions(): number {
    return this.#deps.partitions;
  }

  /** The partitions this runner owns now. */
  get owned(): ReadonlySet<number> {
    return this.#owned;
  }

  /** True when the session's partition is this runner's. */
  ownsSession(sessionId: string): boolean {
    return this.#owned.has(partitionOf(sessionId, this.#deps.partitions));
  }

  /**
   * True when the session's WAL entry at stream seq `streamSeq` was stored before this runner began pulling
   * its partition, so another runner may have had it (`DeliveryFacts.storedBeforePulled`). True too for a
   * partition this runner does not pull. (The consumer's own delivered seq cannot tell: an entry handed back
   * while nobody pulled is rolled back in it.)
   */
  storedBeforePulled(sessionId: string, streamSeq: number): boolean {
    const through = this.#storedThrough.get(partitionOf(sessionId, this.#deps.partitions));
    return through === undefined || streamSeq <= through;
  }

  /** Takes this runner's share among `members` (the live runners): pulls what it gained, stops what it lost. */
  follow(members: readonly string[]): Promise<void> {
    const wanted = partitionsOf(this.#deps.runner, members, this.#deps.partitions);
    this.#changing = this.#changing.then(() => this.#become(wanted));
    return this.#changing;
  }

  async #become(wanted: Set<number>): Promise<void> {
    if (this.#closed) return;
    const gained = [...wanted].filter((partition) => !this.#owned.has(partition));
    const lost = [...this.#owned].filter((partition) => !wanted.has(partition));
    if (gained.length === 0 && lost.length === 0) return;
    this.#owned = wanted;
    for (const partition of lost) this.#stop(partition);
    await Promise.all(gained.map((partition) => this.#start(partition)));
    this.#deps.log.info(
      `runner ${this.#deps.runner}: owns WAL partitions ${describe(wanted)} of ${this.#deps.partitions}${
        gained.length ? `; took ${describe(new Set(gained))}` : ""
      }${lost.length ? `; handed over ${describe(new Set(lost))}` : ""}`,
    );
  }

  /** Pulls the partition's consumer until it is no longer owned; NATS away, it tries again. */
  async #start(partition: number): Promise<void> {
    for (let attempt = 0; this.#owned.has(partition) && !this.#closed; attempt++) {
      try {
        // Read before the pull starts: an entry stored later was never another runner's (one read per partition taken).
        const storedThrough = (await this.#deps.jsm.streams.info(streams.turns)).state.last_seq;
        const consumer = await this.#deps.js.consumers.get(streams.turns, runnerConsumer(partition));
        const messages = await consumer.consume({ max_messages: PARTITION_BATCH, expires: PULL_EXPIRES_MS });
        if (!this.#owned.has(partition) || this.#closed) {
          await messages.close();
          return;
        }
        this.#pulling.set(partition, messages);
        this.#storedThrough.set(partition, storedThrough);
        void (async () => {
          for await (const msg of messages) this.#deps.onMessage(msg);
        })().catch((error: unknown) =>
          this.#deps.log.warn(`WAL partition ${partition}: its deliveries ended: ${messageOf(error)}`),
        );
        return;
      } catch (error) {
        this.#deps.log.warn(`WAL partition ${partition}: not pulled yet (${messageOf(error)}): trying again`);
        await pause(backoffMs(attempt, { baseMs: 250, maxMs: 2_000 }));
      }
    }
  }

  #stop(partition: number): void {
    const messages = this.#pulling.get(partition);
    this.#pulling.delete(partition);
    this.#storedThrough.delete(partition);
    // Entries delivered and not yet handled go back to the WAL (unacked) for the next owner.
    void messages?.close().catch(() => {});
  }

  /** Stops pulling every partition. */
  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#handOverTimer);
    await this.#changing.catch(() => {});
    const pulling = [...this.#pulling.values()];
    this.#pulling.clear();
    this.#owned = new Set();
    await Promise.allSettled(pulling.map((messages) => messages.close()));
  }
}

/** `0-3, 8, 10-11`: a set of partitions, briefly. */
function describe(partitions: ReadonlySet<number>): string {
  const sorted = [...partitions].sort((a, b) => a - b);
  const runs: string[] = [];
  for (let i = 0; i < sorted.length; i++) {
    let end = i;
    while (end + 1 < sorted.length && sorted[end + 1] === sorted[end]! + 1) end++;
    runs.push(end === i ? `${sorted[i]}` : `${sorted[i]}-${sorted[end]}`);
    i = end;
  }
  return runs.length ? runs.join(", ") : "none";
}
