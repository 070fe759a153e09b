import type { EngineEvent } from "../../contracts/events.ts";
import type { TurnRecord } from "../../contracts/turnProtocol.ts";
import { monotonicNow } from "../../eventlog/clock.ts";

/** One turn's id. */
export interface TurnRef {
  session_id: string;
  turn_id: number;
}

/**
 * One turn's event log kept in memory, as the event log writer stores it:
 * `seq` contiguous from 0, `ts_monotonic` on the process's monotonic clock,
 * TURN_COMPLETED given the turn's `total_time_ms`, and each record passed
 * through `stored` first (the `stored` interceptor chain: PII redaction of
 * TURN_STARTED's user input). Each event goes to `onEvent` as it is
 * appended; an error that listener throws is dropped, not the run's.
 */
export class MemoryEventLog {
  readonly #events: EngineEvent[] = [];
  readonly #startedAt = monotonicNow();

  constructor(
    private readonly turn: TurnRef,
    private readonly stored: (turn: TurnRef, record: TurnRecord) => TurnRecord = (_turn, record) => record,
    private readonly onEvent?: (event: EngineEvent) => void,
  ) {}

  /** Appends one record; returns the event as stored. */
  append(record: TurnRecord): EngineEvent {
    const now = monotonicNow();
    const body = this.stored(this.turn, record);
    const payload =
      body.kind === "TURN_COMPLETED"
        ? { ...body.payload, total_time_ms: Math.round((now - this.#startedAt) * 10) / 10 }
        : body.payload;
    const event = {
      session_id: this.turn.session_id,
      turn_id: this.turn.turn_id,
      seq: this.#events.length,
      ts_monotonic: now,
      kind: body.kind,
      payload,
    } as EngineEvent;
    this.#events.push(event);
    try {
      this.onEvent?.(event);
    } catch {
      // A listener (a printer, a test) failing is no reason to stop the run: the event is in the log.
    }
    return event;
  }

  /** The events so far, in order (a copy). */
  get events(): EngineEvent[] {
    return [...this.#events];
  }
}
