/**
 * Retention by count: a session keeps its last N turns. NATS has no limit
 * per session here (a turn's events are a subject of their own, so
 * `max_msgs_per_subject` would cut a turn, not a session), so the runner
 * enforces it: when a turn ends, the turn that falls out of the window has its
 * events, status and episode purged. See docs/operations.md, "Data lifecycle".
 */
import type { JetStreamManager } from "@nats-io/jetstream";
import { buckets, streams, subjects } from "../bus/subjects.ts";
import { messageOf } from "../errors.ts";
import { isStreamNotFound } from "./streams.ts";

/** What a trimmed turn may still be: a status that means it is not over (a suspended run waits for a person). */
const NOT_OVER = new Set(["pending", "inflight", "suspended"]);

/** Where the trim reads a turn's status, and where it says what went wrong. */
export interface SessionTrimDeps {
  jsm: JetStreamManager;
  /** The turn's status, or null when it has none (already trimmed, or never stored). */
  statusOf: (sessionId: string, turnId: number) => Promise<{ status: string } | null>;
  warn: (message: string) => void;
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
      await Promise.all([
        this.#purge(streams.events, subjects.turnEvents(sessionId, old)),
        this.#purge(streams.memory, subjects.memoryEpisode(sessionId, old)),
        this.#purge(`KV_${buckets.turns}`, `$KV.${buckets.turns}.${sessionId}.${old}`),
      ]);
    } catch (error) {
      this.deps.warn(
        `session ${sessionId}: turn ${old} not trimmed (keeping ${this.turnsPerSession}): ${messageOf(error)}`,
      );
    }
  }

  async #purge(stream: string, filter: string): Promise<void> {
    try {
      await this.deps.jsm.streams.purge(stream, { filter });
    } catch (error) {
      if (!isStreamNotFound(error)) throw error; // no episodes stored at all: nothing to trim
    }
  }
}
