import type { JetStreamClient, PubAck } from "@nats-io/jetstream";
import type { TurnRecord } from "../../machines/turn.ts";
import { encodeJson } from "../bus/codec.ts";
import { subjects } from "../bus/subjects.ts";
import type { EngineEvent } from "../contracts/events.ts";
import { monotonicNow } from "./clock.ts";

/** Raised by `finish` when some event of the turn could not be stored. */
export class EventLogError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "EventLogError";
  }
}

interface OpenTurn {
  seq: number;
  startedAt: number;
  pending: Promise<PubAck>[];
}

/**
 * Appends a turn's events to JetStream, in order, `seq` contiguous from 0.
 * Publishes are pipelined (one connection keeps their order) and each carries
 * a msgID `<session>.<turn>.<seq>`, so a retried publish is stored once.
 * `finish` waits until every event of the turn is acknowledged.
 */
export class EventLogWriter {
  readonly #js: JetStreamClient;
  readonly #turns = new Map<string, OpenTurn>();
  readonly #listeners = new Set<(event: EngineEvent) => void>();

  constructor(js: JetStreamClient) {
    this.#js = js;
  }

  /** Local observers of every appended event (e.g. a console view); they cannot block the log. */
  onEvent(listener: (event: EngineEvent) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  append(sessionId: string, turnId: number, record: TurnRecord): EngineEvent {
    const key = `${sessionId}.${turnId}`;
    const now = monotonicNow();
    let turn = this.#turns.get(key);
    if (!turn) {
      turn = { seq: 0, startedAt: now, pending: [] };
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
    turn.pending.push(
      this.#js.publish(subjects.turnEvents(sessionId, turnId), encodeJson(event), { msgID: `${key}.${seq}` }),
    );
    for (const listener of this.#listeners) {
      try {
        listener(event);
      } catch {
        // A faulty observer must not break the turn.
      }
    }
    return event;
  }

  /** Waits for every event of the turn to be stored, then forgets the turn. */
  async finish(sessionId: string, turnId: number): Promise<number> {
    const key = `${sessionId}.${turnId}`;
    const turn = this.#turns.get(key);
    if (!turn) return 0;
    this.#turns.delete(key);
    const results = await Promise.allSettled(turn.pending);
    const failed = results.filter((result) => result.status === "rejected");
    if (failed.length > 0) {
      const first = (failed[0] as PromiseRejectedResult).reason;
      throw new EventLogError(`${failed.length} of ${results.length} events of turn ${key} were not stored: ${first}`, {
        cause: first,
      });
    }
    return results.length;
  }
}
