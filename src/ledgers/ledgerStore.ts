import {
  DeliverPolicy,
  JetStreamApiCodes,
  JetStreamApiError,
  type JetStreamClient,
  type JetStreamManager,
  jetstream,
  jetstreamManager,
} from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import { encodeRecord } from "../bus/codec.ts";
import { CorruptValueError, JsonKv } from "../bus/jsonKv.ts";
import { buckets, eventStreamOfSubject, subjects } from "../bus/subjects.ts";
import { parseRecord } from "../contracts/format.ts";
import {
  type LedgerDigest,
  LedgerEvent,
  type LedgerReplay,
  Ledgers,
  type RecordedCompactionRequest,
} from "../contracts/ledger.ts";
import type { RecordedSupplement } from "../contracts/supplement.ts";
import { pause } from "../deadline.ts";
import { orderedConsumer, releaseConsumer } from "../eventlog/consumers.ts";
import { ensureEventStreams } from "../eventlog/eventStreams.ts";
import { decideLedger, type LedgerDecision, LedgerError, type LedgerWrite, type SupplementWrite } from "./decide.ts";
import { isEmptyDigest, ledgerDigest } from "./digest.ts";
import { applyLedgerEvent, emptyLedgers, ledgerDifferences } from "./fold.ts";

const decoder = new TextDecoder();

/** How many times a write is decided again when another write lands first. */
const MAX_WRITE_ATTEMPTS = 20;

/** What a ledger store needs to be told. Every field has a default. */
export interface LedgerStoreOptions {
  /** Told about a stored message on a ledger subject that is not a ledger event (it is skipped). */
  onInvalid?: (subject: string, seq: number, error: unknown) => void;
  /** Told when a write met another that landed first, and is decided again (`attempt` from 1). */
  onConflict?: (sessionId: string, attempt: number) => void;
}

/**
 * The truth and task ledgers of every session: events on the session's log
 * (`conclave.events.<stream>.<session>.ledger.entries`, in the session's event stream) and a
 * projection of their fold in KV (`conclave_ledgers`, key `<session>`).
 *
 * The log is the truth; the projection is a cache that is caught up with the
 * log on every read that asks for the state (a writer that died between
 * storing an event and updating the projection leaves it behind; a damaged
 * projection is rebuilt). A write is decided against the caught-up state and
 * stored only if no other event landed since (JetStream's expected last
 * subject sequence); otherwise it is decided again. So the log holds the
 * changes in the order they were decided, and folding it always gives the
 * same ledgers.
 */
/** What a turn reads of the ledgers (LedgerStore.forTurn). */
export interface TurnLedgers {
  digest: LedgerDigest | null;
  compaction: RecordedCompactionRequest | null;
  /** The ids of the skills activated for the session, oldest first. */
  skills: string[];
  supplements: RecordedSupplement[];
}

export class LedgerStore {
  /** Per session, the write being made here: this runner's writes to a session go one at a time. */
  readonly #writing = new Map<string, Promise<unknown>>();

  private constructor(
    private readonly js: JetStreamClient,
    private readonly jsm: JetStreamManager,
    private readonly projection: JsonKv<typeof Ledgers>,
    private readonly options: LedgerStoreOptions,
    /** The event log's stream count: which stream holds each session's ledger events. */
    private readonly eventStreams: number,
  ) {}

  static async open(nc: NatsConnection, options: LedgerStoreOptions = {}): Promise<LedgerStore> {
    const jsm = await jetstreamManager(nc);
    const eventStreams = await ensureEventStreams(jsm);
    const projection = await JsonKv.open(nc, buckets.ledgers, Ledgers);
    return new LedgerStore(jetstream(nc), jsm, projection, options, eventStreams);
  }

  /** Both ledgers of a session, caught up with its log. */
  async state(sessionId: string): Promise<Ledgers> {
    // The projection first, then where the log ends: a write landing in between leaves the log ahead, never behind.
    const stored = await this.#projected(sessionId);
    const last = await this.#lastSeq(sessionId);
    // A projection ahead of the log belongs to another log (the stream was recreated): fold it afresh.
    const from = stored && stored.through_seq <= last ? stored : emptyLedgers(sessionId);
    if (last <= from.through_seq) return from;
    const caughtUp = await this.#foldFrom(from, last);
    await this.#project(caughtUp);
    return caughtUp;
  }

  /**
   * The digest agents get in their context, from the projection alone (one
   * read, on every turn's path); null when the session has no ledger entries.
   */
  async digest(sessionId: string): Promise<LedgerDigest | null> {
    return (await this.forTurn(sessionId)).digest;
  }

  /**
   * What a turn reads of the ledgers, from the projection alone (the same one read): the digest (null
   * when the session has no ledger entries), the latest compaction request (null: none) and the
   * skills activated for the session (their ids, oldest first; empty: none) and the recorded
   * supplements (empty: none).
   */
  async forTurn(sessionId: string): Promise<TurnLedgers> {
    const stored = await this.#projected(sessionId);
    if (!stored) return { digest: null, compaction: null, skills: [], supplements: [] };
    const digest = ledgerDigest(stored);
    return {
      digest: isEmptyDigest(digest) ? null : digest,
      compaction: stored.compaction ?? null,
      skills: stored.skills.map((activation) => activation.skill),
      supplements: stored.supplements?.recorded ?? [],
    };
  }

  /**
   * Applies a write: decided against the current ledgers, stored as an event
   * on the log, then projected. A write that changes nothing stores nothing
   * and answers the entity as it is. Rejects with LedgerError (`not_found`,
   * `conflict`) for a write the ledgers refuse.
   */
  write(
    request: LedgerWrite | SupplementWrite,
    by: string,
    now: () => Date = () => new Date(),
  ): Promise<LedgerDecision["result"]> {
    // Writes of one runner queue per session; only other runners' writes can land in between (and are retried on).
    const session = request.session_id;
    const previous = this.#writing.get(session) ?? Promise.resolve();
    const mine = previous.then(
      () => this.#write(request, by, now),
      () => this.#write(request, by, now),
    );
    const settled = mine.catch(() => undefined);
    this.#writing.set(session, settled);
    void settled.then(() => {
      if (this.#writing.get(session) === settled) this.#writing.delete(session);
    });
    return mine;
  }

  async #write(request: LedgerWrite | SupplementWrite, by: string, now: () => Date): Promise<LedgerDecision["result"]> {
    for (let attempt = 0; attempt < MAX_WRITE_ATTEMPTS; attempt++) {
      const state = await this.state(request.session_id);
      const decision = decideLedger(state, request, by, now().toISOString());
      if (!decision.event) return decision.result;
      let seq: number;
      try {
        const ack = await this.js.publish(
          subjects.ledgerEvents(request.session_id, this.eventStreams),
          encodeRecord(decision.event),
          {
            expect: { lastSubjectSequence: state.through_seq },
            timeout: 5_000,
          },
        );
        seq = ack.seq;
      } catch (error) {
        // Another write landed since `state` was read: decide this one again against it.
        if (error instanceof JetStreamApiError && error.code === JetStreamApiCodes.StreamWrongLastSequence) {
          this.options.onConflict?.(request.session_id, attempt + 1);
          // A little random wait, so two runners that keep meeting stop meeting.
          await pause(Math.random() * 5 * (attempt + 1));
          continue;
        }
        throw error;
      }
      await this.#project(applyLedgerEvent(state, decision.event, seq));
      return decision.result;
    }
    throw new LedgerError("conflict", `too many concurrent writes to the ledgers of session ${request.session_id}`);
  }

  /**
   * Folds the session's whole ledger log again and compares it with the stored projection; when
   * events the projection folded have left the log (`expired_events`), there is nothing to compare
   * with, and the replay says so rather than report a difference. With `from` (a replay
   * checkpoint's ledgers, folded through its `through_seq`), only the events after it are read.
   */
  async replay(sessionId: string, from?: Ledgers | null): Promise<LedgerReplay> {
    const [stored, last] = await Promise.all([
      this.#projected(sessionId).catch((error: unknown) => {
        if (error instanceof CorruptValueError) return null;
        throw error;
      }),
      this.#lastSeq(sessionId),
    ]);
    const base = from && from.session_id === sessionId ? from : emptyLedgers(sessionId);
    const tally = { read: 0 };
    const rebuilt = await this.#foldFrom(base, last, tally);
    const read = { from_seq: base.through_seq, events_read: tally.read };
    // Events the projection counted that the log no longer has left it (retention's maximum age): no fold can match.
    const expired = stored ? stored.events - rebuilt.events : 0;
    if (expired > 0) return { rebuilt, stored, matches: true, differences: [], expired_events: expired, ...read };
    const differences = stored
      ? ledgerDifferences(rebuilt, stored)
      : rebuilt.events > 0
        ? ["no stored projection"]
        : [];
    return { rebuilt, stored, matches: differences.length === 0, differences, ...read };
  }

  /** The stored projection; a damaged one reads as none (it is rebuilt from the log and replaced). */
  async #projected(sessionId: string): Promise<Ledgers | null> {
    try {
      return (await this.projection.get(sessionId))?.value ?? null;
    } catch (error) {
      if (error instanceof CorruptValueError) return null;
      throw error;
    }
  }

  /** Stores a fold unless the projection already holds a later one. */
  async #project(ledgers: Ledgers): Promise<void> {
    await this.projection
      .update(ledgers.session_id, (current) => (current && current.through_seq >= ledgers.through_seq ? null : ledgers))
      .catch(async (error: unknown) => {
        if (!(error instanceof CorruptValueError)) throw error;
        await this.projection.put(ledgers.session_id, ledgers);
      });
  }

  /** The stream sequence of the session's last ledger event (0: none). */
  async #lastSeq(sessionId: string): Promise<number> {
    const subject = subjects.ledgerEvents(sessionId, this.eventStreams);
    const last = await this.jsm.streams.getMessage(eventStreamOfSubject(subject), { last_by_subj: subject });
    return last?.seq ?? 0;
  }

  /** `from`, with the session's ledger events after `from.through_seq`, through `last`, folded on (`tally` counts them). */
  async #foldFrom(from: Ledgers, last: number, tally?: { read: number }): Promise<Ledgers> {
    if (last <= from.through_seq) return from;
    const subject = subjects.ledgerEvents(from.session_id, this.eventStreams);
    const consumer = await orderedConsumer(this.js, eventStreamOfSubject(subject), {
      filter_subjects: subject,
      deliver_policy: DeliverPolicy.StartSequence,
      opt_start_seq: from.through_seq + 1,
    });
    const messages = await consumer.consume();
    let state = from;
    try {
      for await (const msg of messages) {
        if (tally) tally.read += 1;
        const parsed = (() => {
          try {
            return parseRecord(LedgerEvent, JSON.parse(decoder.decode(msg.data)), `ledger event ${msg.seq}`);
          } catch (error) {
            return { success: false as const, error };
          }
        })();
        if (parsed.success) state = applyLedgerEvent(state, parsed.data, msg.seq);
        else {
          // Skipped by every fold alike, so replays still agree; its position still counts.
          this.options.onInvalid?.(msg.subject, msg.seq, parsed.error);
          state = { ...state, through_seq: msg.seq };
        }
        // Through the last event seen when the read began; or caught up, should that one be gone (a purge).
        if (msg.seq >= last || msg.info.pending === 0) break;
      }
    } finally {
      void messages.stop();
      await releaseConsumer(consumer);
    }
    return state;
  }
}
