/**
 * What a runner does with one delivery of a WAL entry: pure functions from
 * what it knows (the record, its own holdings, the session's lease, the
 * turn's status, what is stored of the turn) to an action. The runner
 * (`runner.ts`) gathers the facts and carries the action out; everything
 * that decides lives here, so every case is unit-tested without a server.
 *
 * A delivery is decided in up to three steps, each reading more:
 *   1. `decideDelivery`   — from the record and this runner's own state;
 *   2. `decideRedelivery` — for a delivery after the first, from the turn's status;
 *   3. `decideTakeover`   — for a turn taken over, from its stored events.
 */
import { FormatTooNewError, parseRecord } from "../../contracts/format.ts";
import { type TurnStatusRecord, WalEntry } from "../../contracts/wal.ts";
import { messageOf } from "../../errors.ts";
import { WAL_ACK_WAIT_MS } from "../../eventlog/streams.ts";

export interface DeliveryFacts {
  /** The entry's turn id (a record that is not a valid WAL entry never gets this far). */
  turnId: number;
  /** How many times JetStream has delivered this entry (1 the first time). */
  deliveryCount: number;
  /**
   * How long ago the entry was stored (the stream's timestamp). A first delivery is trusted as one only while
   * younger than a redelivery can be: nats-server has been seen handing back an abandoned entry with a delivery
   * count of 1 (none of its pull requests waiting when it fell due), to the runner that took it over.
   */
  storedAgoMs: number;
  /**
   * The entry was stored before this runner began pulling its partition: another runner may have had it,
   * and handed it back while nobody pulled the partition, which nats-server then delivers with a count of 1.
   * Such a delivery is not trusted as a first one.
   */
  storedBeforePulled?: boolean;
  /** This runner holds a WAL handle for the turn: it is queued or running here. */
  heldHere: boolean;
  /**
   * What it holds is another WAL entry for the same turn (another stream
   * seq): a suspended run's earlier entry delivered again while its answer
   * runs here.
   */
  heldOtherEntry?: boolean;
  /** This runner holds (or just took) the session's lease. */
  ownsSession: boolean;
  /** The entry waited longer than the turn TTL. */
  expired: boolean;
  /**
   * This runner's live session actor already finished this turn: it would
   * refuse it as already run — though its end was never settled (its events
   * failed to be stored), or it would not be delivered again.
   */
  finishedHere: boolean;
}

export type DeliveryAction =
  /** Delivered again while this runner holds it (its sign of life came late): keep the newer handle. */
  | { kind: "refresh_hold" }
  /** Another entry for a turn this runner holds: a stale copy of a suspended run's earlier entry; remove it. */
  | { kind: "drop_stale" }
  /** Another runner owns the session: hand the entry back for its owner. */
  | { kind: "defer_to_owner" }
  /** Waited too long to be run: settle it as expired. */
  | { kind: "expire" }
  /**
   * This runner's session actor already ran the turn. Unless its status
   * shows it ended (a late copy: ack it), its end was never settled (e.g.
   * its events could not be stored): drop the session actor,
   * so the session is restored from its stored state, and take the entry
   * again. Never leaves a turn held with nobody working on it.
   */
  | { kind: "reset_session" }
  /** First delivery: no runner has had it, so it is no takeover. Run it. */
  | { kind: "start" }
  /**
   * Delivered once by its count, but stored long enough ago to be an entry some runner took and lost: take
   * its status first; run it as new only when no attempt is recorded, else take it over (`decideRedelivery`).
   */
  | { kind: "start_if_unattempted" }
  /** A delivery after the first: read the turn's status first (`decideRedelivery`). */
  | { kind: "check_status" };

/**
 * How old a first delivery may be and still be trusted as one: half the WAL's ack wait, the least time
 * before an entry taken and abandoned can come back (the half leaves room for clocks that disagree).
 */
export const FIRST_DELIVERY_WINDOW_MS = WAL_ACK_WAIT_MS / 2;

/** Step 1: what to do with a delivery, from the record and this runner's own state. */
export function decideDelivery(facts: DeliveryFacts): DeliveryAction {
  if (facts.heldHere) return facts.heldOtherEntry ? { kind: "drop_stale" } : { kind: "refresh_hold" };
  if (!facts.ownsSession) return { kind: "defer_to_owner" };
  if (facts.expired) return { kind: "expire" };
  if (facts.finishedHere) return { kind: "reset_session" };
  if (facts.deliveryCount === 1)
    return facts.storedAgoMs < FIRST_DELIVERY_WINDOW_MS && !facts.storedBeforePulled
      ? { kind: "start" }
      : { kind: "start_if_unattempted" };
  return { kind: "check_status" };
}

/** What taking the turn's status (`TurnStatusStore.take`) found and did. */
export interface TakeResult {
  /** The record before this runner's take; null when none was stored. */
  before: TurnStatusRecord | null;
  /** The take recorded this runner's attempt (the turn was pending or inflight and not poison). */
  taken: boolean;
  /** Runners started it the maximum number of times without finishing it. */
  poison: boolean;
  /** The entry answers a suspension older than the last one answered (or is the run's first entry): a stale copy. */
  stale?: boolean;
  /**
   * This runner's own attempt going on: it took the turn before and let it go itself (a delivery that
   * failed here, its lease lapsed), and no other runner took it meanwhile. No new attempt is counted
   * towards poison, though the run going on is numbered as a new one.
   */
  ownRetake?: boolean;
}

export type RedeliveryAction =
  /** Started too many times without finishing: fail it for good and keep it as a dead letter. */
  | { kind: "poison" }
  /**
   * Already done, failed or expired, or a stale copy of a suspended run's
   * earlier entry (its runner died before its ack went out): a late
   * duplicate delivery; remove it from the WAL.
   */
  | { kind: "already_settled" }
  /** A runner may have started it and died: look at what it stored (`decideTakeover`). */
  | { kind: "take_over"; attempt: number; previousRunner?: string };

/** Step 2: a delivery after the first, from the turn's status as this runner took it. */
export function decideRedelivery(take: TakeResult): RedeliveryAction {
  if (take.stale) return { kind: "already_settled" };
  if (take.poison) return { kind: "poison" };
  if (!take.taken) return { kind: "already_settled" };
  const attempt = Math.max(2, (take.before?.attempts ?? 1) + 1);
  return {
    kind: "take_over",
    attempt,
    ...(take.before?.runner ? { previousRunner: take.before.runner } : {}),
  };
}

/**
 * For a `start_if_unattempted` delivery, once its status is taken: some runner started the turn before (or it
 * ended, or is poison or stale), so it is handled as a delivery after the first, with this take.
 */
export function attemptedBefore(take: TakeResult): boolean {
  return !take.taken || (take.before?.attempts ?? 0) > 0;
}

/** What is stored of a turn taken over. */
export interface StoredTurn {
  /** Kinds of its stored events, in seq order. */
  kinds: readonly string[];
  /** The seq of its last stored event; -1 when none is. */
  lastSeq: number;
  /**
   * The entry resumes a suspended recipe run and no runner has started it
   * yet (its status was pending with no attempt): what is stored is the run
   * up to its suspension, not an abandoned attempt.
   */
  unstartedResume?: boolean;
}

export type TakeoverAction =
  /** Its terminal event is stored (and, the writer guarantees, everything before it): settle it as done. */
  | { kind: "settle_done" }
  /** Nothing stored (or only a suspended run's log up to its suspension): run it as if new. */
  | { kind: "run_fresh" }
  /**
   * Part of it is stored: record `TURN_RESUMED` after `afterSeq` and run it again; a pipeline turn's recorded
   * steps are answered from its log (`recordedSteps.ts`), so it goes on after its last one.
   */
  | { kind: "resume"; afterSeq: number };

/** Step 3: a turn taken over, from what its earlier attempt stored. */
export function decideTakeover(stored: StoredTurn): TakeoverAction {
  if (stored.kinds.includes("TURN_COMPLETED")) return { kind: "settle_done" };
  // Only TURN_QUEUED stored: the turn waited for a place and never started.
  if (stored.kinds.every((kind) => kind === "TURN_QUEUED") || stored.unstartedResume) return { kind: "run_fresh" };
  return { kind: "resume", afterSeq: stored.lastSeq };
}

const decoder = new TextDecoder();

/**
 * A delivery's record as a WAL entry, or why it is not one. `tooNew`: the entry is in a newer format
 * than this runner reads (a runner of a newer release wrote it): not invalid, only not this runner's to run.
 */
export function parseEntry(
  data: Uint8Array,
): { ok: true; entry: WalEntry } | { ok: false; reason: string; tooNew?: FormatTooNewError } {
  try {
    const parsed = parseRecord(WalEntry, JSON.parse(decoder.decode(data)), "WAL entry");
    if (parsed.success) return { ok: true, entry: parsed.data };
    const tooNew = parsed.error instanceof FormatTooNewError ? parsed.error : undefined;
    return { ok: false, reason: parsed.error.message, ...(tooNew ? { tooNew } : {}) };
  } catch (error) {
    return { ok: false, reason: messageOf(error) };
  }
}
