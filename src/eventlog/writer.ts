import type { JetStreamClient, PubAck } from "@nats-io/jetstream";
import { JetStreamApiCodes, JetStreamApiError } from "@nats-io/jetstream";
import { encodeJson } from "../bus/codec.ts";
import { subjects } from "../bus/subjects.ts";
import type { EngineEvent } from "../contracts/events.ts";
import type { TurnRecord } from "../contracts/turnProtocol.ts";
import { ConclaveError } from "../errors.ts";
import { monotonicNow } from "./clock.ts";

/** Raised by `finish` when some event of the turn could not be stored, or another writer took the turn. */
export class EventLogError extends ConclaveError<"event_log"> {
  constructor(message: string, options?: ErrorOptions) {
    super("event_log", message, options);
  }
}

export interface EventLogWriterOptions {
  /** How long one event may take to be stored, retries included (e.g. across a NATS restart). Default 60 s. */
  storeTimeoutMs: number;
  /** Called once when another writer is found writing the same turn (this one must stop). */
  onFenced?: (sessionId: string, turnId: number) => void;
}

interface OpenTurn {
  seq: number;
  startedAt: number;
  pending: Promise<unknown>[];
  fenced: boolean;
  /** The stream sequence the turn's subject must be at when this writer's first event lands (0: no event yet). */
  expectLast: number;
  /** Settles once this writer's first event is stored (or refused): every later event is published after it. */
  gate: Promise<void> | null;
}

/**
 * Appends a turn's events to JetStream, `seq` contiguous from 0. Each event
 * carries the message id `<session>.<turn>.<seq>`: a publish that fails is
 * retried with the same id until it is stored, and JetStream keeps it once.
 * Single-writer fencing: a writer's first event of a turn is published with
 * the subject's expected last sequence (none yet, or the last event a taken-over
 * turn had stored) and awaited; the rest are pipelined behind it (one
 * connection keeps their order). A refused expectation, or a first publish
 * reported as a duplicate, means another writer holds the turn (a runner taken
 * for dead that is not): the turn is fenced, nothing more is written, and
 * `finish` fails.
 * `finish` waits until every event of the turn is stored.
 */
export class EventLogWriter {
  readonly #js: JetStreamClient;
  readonly #options: EventLogWriterOptions;
  readonly #turns = new Map<string, OpenTurn>();
  /** Per session, the terminal event of its last turn, while it is being stored. */
  readonly #sessionTails = new Map<string, Promise<void>>();

  constructor(js: JetStreamClient, options: Partial<EventLogWriterOptions> = {}) {
    this.#js = js;
    this.#options = { storeTimeoutMs: 60_000, ...options };
  }

  /**
   * Prepares to write a turn that may already have events (a takeover): the
   * next event gets the seq after the last of the `stored` ones.
   */
  open(sessionId: string, turnId: number, stored: readonly EngineEvent[], lastStreamSeq: number): void {
    const key = `${sessionId}.${turnId}`;
    const last = stored.at(-1);
    this.#turns.set(key, {
      seq: last ? last.seq + 1 : 0,
      startedAt: monotonicNow(),
      pending: [],
      fenced: false,
      expectLast: lastStreamSeq,
      gate: null,
    });
  }

  append(sessionId: string, turnId: number, record: TurnRecord): EngineEvent {
    const key = `${sessionId}.${turnId}`;
    const now = monotonicNow();
    let turn = this.#turns.get(key);
    if (!turn) {
      turn = { seq: 0, startedAt: now, pending: [], fenced: false, expectLast: 0, gate: null };
      this.#turns.set(key, turn);
    }
    const seq = turn.seq++;
    const payload =
      record.kind === "TURN_COMPLETED"
        ? { ...record.payload, total_time_ms: Math.round((now - turn.startedAt) * 10) / 10 }
        : record.payload;
    const event = {
      session_id: sessionId,
      turn_id: turnId,
      seq,
      ts_monotonic: now,
      kind: record.kind,
      payload,
    } as EngineEvent;
    if (turn.gate === null) {
      // Single-writer fencing: this writer's first event must land where it expects the turn to be.
      // A turn that follows another of the session starts after that one's terminal event is stored, so a
      // session's log never shows a turn starting before the previous one completed.
      const open = turn;
      const previous = this.#sessionTails.get(sessionId);
      const first = previous
        ? previous.then(() => this.#store(open, event, open.expectLast))
        : this.#store(turn, event, turn.expectLast);
      turn.gate = first.then(
        () => undefined,
        () => undefined,
      );
      turn.pending.push(first);
    } else if (!turn.fenced) {
      const open = turn;
      // The terminal event waits until every earlier one is acknowledged (publishes retried across a NATS
      // restart can land out of order): a reader that stops at TURN_COMPLETED has then seen the whole turn.
      // If an earlier one is never stored, neither is the terminal event, and `finish` fails.
      const after = record.kind === "TURN_COMPLETED" ? Promise.all([...open.pending]) : open.gate!;
      const stored = after.then(() => (open.fenced ? undefined : this.#store(open, event)));
      turn.pending.push(stored);
      if (record.kind === "TURN_COMPLETED") this.#setSessionTail(sessionId, stored);
    }
    return event;
  }

  /** The session's next turn starts writing once this (its previous turn's terminal event) is settled. */
  #setSessionTail(sessionId: string, terminal: Promise<unknown>): void {
    const tail = terminal.then(
      () => undefined,
      () => undefined,
    );
    this.#sessionTails.set(sessionId, tail);
    void tail.then(() => {
      if (this.#sessionTails.get(sessionId) === tail) this.#sessionTails.delete(sessionId);
    });
  }

  async #store(turn: OpenTurn, event: EngineEvent, expectLast?: number): Promise<PubAck | undefined> {
    const subject = subjects.turnEvents(event.session_id, event.turn_id);
    const msgID = `${event.session_id}.${event.turn_id}.${event.seq}`;
    const data = encodeJson(event);
    const deadline = Date.now() + this.#options.storeTimeoutMs;
    for (let attempt = 0; ; attempt++) {
      try {
        const ack = await this.#js.publish(subject, data, {
          msgID,
          timeout: 5_000,
          ...(expectLast === undefined ? {} : { expect: { lastSubjectSequence: expectLast } }),
        });
        if (ack.duplicate && attempt === 0) this.#fence(turn, event);
        return ack;
      } catch (error) {
        if (error instanceof JetStreamApiError && error.code === JetStreamApiCodes.StreamWrongLastSequence) {
          this.#fence(turn, event); // another writer got there first
          return undefined;
        }
        if (Date.now() >= deadline) throw error;
        await new Promise((resolve) => setTimeout(resolve, Math.min(100 * 2 ** attempt, 2_000)));
      }
    }
  }

  #fence(turn: OpenTurn, event: EngineEvent): void {
    if (turn.fenced) return;
    turn.fenced = true;
    this.#options.onFenced?.(event.session_id, event.turn_id);
  }

  /**
   * Resolves once every event appended to the turn so far is stored (a
   * durable step goes on only then); rejects when one was not, or another
   * writer holds the turn.
   */
  async flushed(sessionId: string, turnId: number): Promise<void> {
    const key = `${sessionId}.${turnId}`;
    const turn = this.#turns.get(key);
    if (!turn) return;
    await Promise.all([...turn.pending]);
    if (turn.fenced) throw new EventLogError(`turn ${key} is being written by another runner`);
  }

  /** Waits for every event of the turn to be stored, then forgets the turn. Returns how many were stored. */
  async finish(sessionId: string, turnId: number): Promise<number> {
    const key = `${sessionId}.${turnId}`;
    const turn = this.#turns.get(key);
    if (!turn) return 0;
    this.#turns.delete(key);
    const results = await Promise.allSettled(turn.pending);
    if (turn.fenced)
      throw new EventLogError(`turn ${key} is being written by another runner: this one stopped writing it`);
    const failed = results.filter((result) => result.status === "rejected");
    if (failed.length > 0) {
      const first = (failed[0] as PromiseRejectedResult).reason;
      throw new EventLogError(`${failed.length} of ${results.length} events of turn ${key} were not stored: ${first}`, {
        cause: first,
      });
    }
    return results.length;
  }

  /** Forgets a turn without waiting (it was interrupted by a takeover elsewhere). */
  abandon(sessionId: string, turnId: number): void {
    this.#turns.delete(`${sessionId}.${turnId}`);
  }
}
