/**
 * Retention by count: a session keeps its last N turns. NATS has no limit
 * per session here (a turn's events are a subject of their own, so
 * `max_msgs_per_subject` would cut a turn, not a session), so the runner
 * enforces it: when a turn ends, the turn that falls out of the window loses
 * its events, status and episode, and the memory graph what that turn left
 * (src/memory/graph/trimTurn.ts). Messages are removed with the secure delete
 * an erase uses, not a purge: a purge leaves their bytes in the block files.
 * See docs/operations.md, "Data lifecycle".
 */
import type { JetStreamManager } from "@nats-io/jetstream";
import { buckets, eventStreamOfSubject, streams, subjects } from "../bus/subjects.ts";
import { messageOf } from "../errors.ts";
import type { Logger } from "../telemetry/log.ts";
import { secureErase } from "./eraseSecure.ts";
import { eventStreamCount } from "./eventStreams.ts";

/** What a trimmed turn may still be: a status that means it is not over (a suspended run waits for a person). */
const NOT_OVER = new Set(["pending", "inflight", "suspended"]);

/** Where the trim reads a turn's status, and where it says what went wrong. */
export interface SessionTrimDeps {
  jsm: JetStreamManager;
  /** The turn's status, or null when it has none (already trimmed, or never stored). */
  statusOf: (sessionId: string, turnId: number) => Promise<{ status: string } | null>;
  /** Where the trim says what went wrong (warn) and how far a big one got (info). */
  log: Logger;
  /** Removes what the session's turn left in the memory graph (trimNatsGraphTurn / trimGraphTurn): the texts removed. */
  trimGraph?: (sessionId: string, turnId: number) => Promise<readonly string[]>;
}

/**
 * Keeps the last `turnsPerSession` turns of each session. `afterTurn` is told
 * each turn's end and purges the one `turnsPerSession` turns older, unless it
 * is not over (a suspended recipe run keeps its log until it ends). Turns older
 * than that, left from before the limit was set or lowered, stay: erase the
 * session, or let the maximum age take them.
 */
export class SessionTrim {
  constructor(
    private readonly deps: SessionTrimDeps,
    readonly turnsPerSession: number,
  ) {}

  /** Turn `turnId` of the session ended: trims the turn that falls out of the window. Never rejects. */
  async afterTurn(sessionId: string, turnId: number): Promise<void> {
    const old = turnId - this.turnsPerSession;
    if (old < 1) return;
    try {
      const status = await this.deps.statusOf(sessionId, old);
      if (status && NOT_OVER.has(status.status)) return;
      const events = subjects.turnEvents(sessionId, old, await eventStreamCount(this.deps.jsm));
      await Promise.all([
        this.deps.trimGraph?.(sessionId, old),
        this.#erase(sessionId, eventStreamOfSubject(events), events),
        this.#erase(sessionId, streams.memory, subjects.memoryEpisode(sessionId, old)),
        this.#erase(sessionId, `KV_${buckets.turns}`, `$KV.${buckets.turns}.${sessionId}.${old}`),
      ]);
    } catch (error) {
      this.deps.log.warn(
        `session ${sessionId}: turn ${old} not trimmed (keeping ${this.turnsPerSession}): ${messageOf(error)}`,
      );
    }
  }

  /** Overwrites and deletes the stream's messages on `filter` (a stream not there yet: nothing to trim). */
  async #erase(sessionId: string, stream: string, filter: string): Promise<void> {
    await secureErase(this.deps.jsm, stream, filter, { log: this.deps.log, label: `trim of session ${sessionId}` });
  }
}
