import type { PubAck } from "@nats-io/jetstream";
import { encodeEventBatch } from "../contracts/eventBatch.ts";
import type { EngineEvent } from "../contracts/events.ts";
import { type EventPublisher, isWrongLastSequence } from "./eventPublisher.ts";

/**
 * Single-writer fencing of a turn's events (used by the writer, `writer.ts`).
 *
 * A writer's first event of a turn, and its terminal one, are published alone
 * with the subject's expected last sequence (none yet, or the last event a
 * taken-over turn had stored; then the last this writer stored). A refused
 * expectation, or an event's first publish reported as a duplicate, means
 * another writer holds the turn (a runner taken for dead that is not, still
 * running it beside its taker): the turn is fenced, nothing more is written,
 * and `finish` fails. So two writers of one turn never both store a
 * TURN_COMPLETED.
 *
 * Every other batch is stored as one message (a batch of events, contracts/eventBatch.ts) when the
 * writer stores batches, else as one message per event, pipelined.
 */

/** An event appended and not yet settled, with the promise `pending` holds for it. */
export interface Queued {
  event: EngineEvent;
  data: Uint8Array;
  settle: (ack: PubAck | undefined) => void;
  fail: (error: unknown) => void;
}

/** What a turn's publishing knows of its hold on the turn: the state the fencing reads and sets. */
export interface FencedTurn {
  /** Appended, not yet published. */
  queue: Queued[];
  fenced: boolean;
  /**
   * The turn subject's last stream sequence as this writer knows it: what an earlier attempt stored (0: none),
   * then each of its own events as stored. Its first event and its terminal one land only if the subject is
   * still there, so a writer that lost the turn to another never stores a second TURN_COMPLETED.
   */
  expectLast: number;
  /** This writer's first event of the turn is stored (fencing passed). */
  opened: boolean;
  /** A failure that stops the turn's log: nothing after a missing event is stored. */
  broken: unknown;
}

/** Told once when a turn is fenced (the writer's `onFenced` option). */
type OnFenced = ((sessionId: string, turnId: number) => void) | undefined;

/**
 * The most bytes of encoded events one batch holds (at least one event, however large): a stored batch
 * stays well under NATS's 1 MiB `max_payload`, and a reader's one message under a few hundred KiB.
 */
export const MAX_BATCH_BYTES = 256 * 1024;

/**
 * The first event alone (it is fenced), the terminal event alone, else what is queued before the
 * terminal one, up to MAX_BATCH_BYTES.
 */
export function nextBatch(turn: FencedTurn): Queued[] {
  if (!turn.opened) return turn.queue.splice(0, 1);
  let count = 0;
  let bytes = 0;
  for (const queued of turn.queue) {
    if (queued.event.kind === "TURN_COMPLETED") break;
    bytes += queued.data.length;
    if (count > 0 && bytes > MAX_BATCH_BYTES) break;
    count++;
  }
  return turn.queue.splice(0, Math.max(count, 1));
}

/**
 * Publishes one batch (`nextBatch`), fencing the turn when another writer holds it: as one stored
 * message when `together` and it holds more than one event, else one message per event.
 */
export async function publishBatch(
  publisher: EventPublisher,
  turn: FencedTurn,
  batch: Queued[],
  onFenced: OnFenced,
  together = false,
): Promise<void> {
  if (together && batch.length > 1) return publishTogether(publisher, turn, batch, onFenced);
  const first = !turn.opened;
  // Both go out alone (nextBatch), so the writer knows where the subject should stand.
  const fenced = first || batch[0]?.event.kind === "TURN_COMPLETED";
  const expect = () => (fenced ? turn.expectLast : undefined);
  const results = await Promise.allSettled(
    batch.map((queued) => publisher.publish(queued.event, queued.data, expect())),
  );
  for (let i = 0; i < batch.length; i++) {
    const result = results[i]!;
    const queued = batch[i]!;
    if (result.status === "fulfilled") {
      // Sent once, and already there under its id: another writer of the turn stored that seq first.
      if (result.value.duplicate) fence(turn, queued.event, onFenced);
      else {
        turn.opened = true;
        turn.expectLast = Math.max(turn.expectLast, result.value.seq);
      }
      queued.settle(result.value);
      continue;
    }
    if (isWrongLastSequence(result.reason)) {
      fence(turn, queued.event, onFenced); // another writer got there first
      queued.settle(undefined);
      continue;
    }
    // This one was not stored: it and every later one of the batch go again, one at a time, in order.
    for (const again of batch.slice(i)) {
      if (turn.fenced) {
        again.settle(undefined);
        continue;
      }
      if (turn.broken !== undefined) {
        again.fail(turn.broken);
        continue;
      }
      try {
        const ack = await publisher.storeWithRetry(again.event, again.data, expect());
        turn.opened = true;
        // A duplicate here may be this writer's lost first attempt, or another writer's event under the same
        // id: its seq is not taken as this writer's, so a taker's events are never what its TURN_COMPLETED
        // expects (at worst this writer is fenced by its own event, and the turn is taken over from the log).
        if (!ack.duplicate) turn.expectLast = Math.max(turn.expectLast, ack.seq);
        again.settle(ack);
      } catch (error) {
        if (isWrongLastSequence(error)) {
          fence(turn, again.event, onFenced);
          again.settle(undefined);
        } else {
          turn.broken = error;
          again.fail(error);
        }
      }
    }
    return;
  }
}

/**
 * Stores a batch of events (never a writer's first event nor its terminal one: those go alone) as one
 * message, under the message id of its first event: retried whole until stored, so a retry is stored
 * once, and a first publish reported as a duplicate means another writer stored that seq first.
 */
async function publishTogether(
  publisher: EventPublisher,
  turn: FencedTurn,
  batch: Queued[],
  onFenced: OnFenced,
): Promise<void> {
  const head = batch[0]!.event;
  const data = encodeEventBatch(batch.map((queued) => queued.data));
  let ack: PubAck;
  try {
    ack = await publisher.publish(head, data, undefined, batch.length);
    if (ack.duplicate) fence(turn, head, onFenced);
  } catch {
    try {
      ack = await publisher.storeWithRetry(head, data, undefined, batch.length);
    } catch (error) {
      turn.broken = error;
      for (const queued of batch) queued.fail(error);
      return;
    }
  }
  // As for one event retried (publishBatch): a duplicate's seq is not taken as this writer's.
  if (!ack.duplicate) turn.expectLast = Math.max(turn.expectLast, ack.seq);
  for (const queued of batch) queued.settle(turn.fenced ? undefined : ack);
}

function fence(turn: FencedTurn, event: EngineEvent, onFenced: OnFenced): void {
  if (turn.fenced) return;
  turn.fenced = true;
  onFenced?.(event.session_id, event.turn_id);
}
