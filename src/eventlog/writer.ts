import { randomUUID } from "node:crypto";
import type { JetStreamClient, PubAck } from "@nats-io/jetstream";
import { encodeRecord } from "../bus/codec.ts";
import { InboxRequests } from "../bus/inboxRequests.ts";
import { setting } from "../config/load.ts";
import type { EngineEvent } from "../contracts/events.ts";
import { turnKey } from "../contracts/turnKey.ts";
import type { TurnRecord } from "../contracts/turnProtocol.ts";
import {
  ChunkCoalescer,
  type CoalescedChunk,
  runPayload,
  type StreamChunk,
  type StreamChunkOptions,
  streamChunkSettings,
  timerSchedule,
} from "./chunkCoalescer.ts";
import { monotonicNow } from "./clock.ts";
import { EventPublisher } from "./eventPublisher.ts";
import { type EventLevel, eventLevelFromEnv, recordedKinds } from "./levels.ts";
import { sendLiveChunk } from "./liveChunks.ts";
import { type FencedTurn, nextBatch, publishBatch } from "./turnFencing.ts";
import { EventLogError, type EventLogWriterOptions } from "./writerOptions.ts";

export { EventLogError, type EventLogWriterOptions } from "./writerOptions.ts";

/** A turn this writer has open; its fencing state is `FencedTurn`'s (turnFencing.ts). */
interface OpenTurn extends FencedTurn {
  sessionId: string;
  turnId: number;
  seq: number;
  startedAt: number;
  /** One promise per appended event: settles once it is stored (or the turn is fenced), rejects when it cannot be. */
  pending: Promise<unknown>[];
  /** A drain is publishing the queue. */
  draining: boolean;
  /** Set on the turn's first event: the previous turn of the session ends first. */
  after: Promise<void> | undefined;
  /** What earlier attempts stored of the turn (given to `open`); empty for a turn this writer started. */
  stored: readonly EngineEvent[];
  /** Stream chunks buffered, to be stored coalesced; null when every chunk is stored as it comes (`chunkMs` 0). */
  chunks: ChunkCoalescer | null;
  /** Names this writer's hold on the turn in its live chunks (a takeover's writer has another). */
  writer: string;
}

/**
 * Appends a turn's events to JetStream, `seq` contiguous from 0, stored in
 * `seq` order. Each stored message carries the message id
 * `<session>.<turn>.<seq>` (a batch: its first event's): a publish that fails
 * is retried with the same id until it is stored, and JetStream keeps it once.
 *
 * Order: a turn's events go out in batches, each batch pipelined on the one
 * connection (which keeps their order) and the next sent only once the whole
 * batch is acknowledged. When a publish fails (a NATS restart lost it, or it
 * is not acknowledged in time), it and every event after it are published
 * again one at a time, in order. So an event never reaches the stream over a
 * new connection while an earlier one, lost with the old connection, is still
 * to be stored: a raw reader of the stream sees each turn in `seq` order.
 *
 * Single-writer fencing (see turnFencing.ts): a writer's first event of a
 * turn, and its terminal one, are published alone with the subject's expected
 * last sequence. A refused expectation, or an event's first publish reported
 * as a duplicate, means another writer holds the turn: the turn is fenced,
 * nothing more is written, and `finish` fails. So two writers of one turn
 * never both store a TURN_COMPLETED.
 *
 * The terminal event (TURN_COMPLETED) is published alone, after every earlier
 * one is stored; a turn that follows another of the same session starts
 * after that one's terminal event is stored. `finish` waits until every event
 * of the turn is stored.
 *
 * Batches: the events of a turn appended while the ones before them are
 * being stored go out together, as one stored message (a batch of events,
 * contracts/eventBatch.ts), unless the writer stores each alone (`batches`
 * false). A turn's first event of a writer and its terminal one always go alone.
 *
 * Stream chunks are stored coalesced (see chunkCoalescer.ts): buffered per
 * stream and stored as one STREAM_CHUNK per run, when the run is `chunkMs`
 * old, the buffer holds `chunkBytes`, and always before any other event of the
 * turn is stored and when the turn is flushed or finished. A run gets its seq
 * when it is stored, so seqs stay contiguous. Each chunk also goes out live
 * (`live`) when it is appended, carrying the seq that will hold it.
 */
export class EventLogWriter {
  readonly #publisher: EventPublisher;
  readonly #options: EventLogWriterOptions;
  readonly #turns = new Map<string, OpenTurn>();
  /** Per session, the terminal event of its last turn, while it is being stored. */
  readonly #sessionTails = new Map<string, Promise<void>>();
  readonly #chunking: StreamChunkOptions;
  /** The kinds stored at this writer's level (one Set lookup an event). */
  readonly #recorded: ReadonlySet<string>;
  /** How much of a turn this writer stores (`CONCLAVE_EVENT_LEVEL`, or the `level` option). */
  readonly level: EventLevel;
  /** Events appended while earlier ones are being stored go out as one message (`batches`). */
  readonly #batches: boolean;
  /** This writer's name in its live chunks, and how many turns it opened (each hold on a turn is named apart). */
  readonly #id = randomUUID().slice(0, 8);
  #opened = 0;

  /** `eventStreams`: the log's stream count (which stream each session's is). Throws "config" on a bad chunk setting. */
  constructor(js: JetStreamClient, eventStreams: number, options: Partial<EventLogWriterOptions> = {}) {
    this.#options = { storeTimeoutMs: 60_000, ...options };
    const requests = options.transport ? InboxRequests.of(options.transport) : null;
    this.#publisher = new EventPublisher(js, eventStreams, requests, this.#options.storeTimeoutMs);
    this.#chunking = streamChunkSettings({ chunkMs: options.chunkMs, chunkBytes: options.chunkBytes });
    this.level = options.level ?? eventLevelFromEnv();
    this.#recorded = recordedKinds(this.level);
    this.#batches = options.batches ?? setting(process.env, "CONCLAVE_EVENT_BATCHES");
  }

  /**
   * Prepares to write a turn that may already have events (a takeover): the
   * next event gets the seq after the last of the `stored` ones.
   */
  open(sessionId: string, turnId: number, stored: readonly EngineEvent[], lastStreamSeq: number): void {
    const last = stored.at(-1);
    this.#turns.get(`${turnKey(sessionId, turnId)}`)?.chunks?.discard();
    const turn = this.#newTurn(sessionId, turnId, last ? last.seq + 1 : 0, monotonicNow(), lastStreamSeq);
    turn.stored = stored;
    this.#turns.set(`${turnKey(sessionId, turnId)}`, turn);
  }

  /**
   * The events earlier attempts stored of a turn this writer has open (as given to `open`), so the
   * attempt going on can tell what is already recorded; empty when none were, or the turn is not open.
   */
  storedEvents(sessionId: string, turnId: number): readonly EngineEvent[] {
    return this.#turns.get(`${turnKey(sessionId, turnId)}`)?.stored ?? [];
  }

  #newTurn(sessionId: string, turnId: number, seq: number, startedAt: number, expectLast: number): OpenTurn {
    const turn: OpenTurn = {
      sessionId,
      turnId,
      seq,
      startedAt,
      pending: [],
      queue: [],
      draining: false,
      fenced: false,
      expectLast,
      opened: false,
      after: undefined,
      broken: undefined,
      stored: [],
      chunks: null,
      writer: `${this.#id}.${++this.#opened}`,
    };
    if (this.#chunking.chunkMs > 0)
      turn.chunks = new ChunkCoalescer(
        this.#chunking,
        (runs) => this.#storeRuns(turn, runs),
        this.#options.schedule ?? timerSchedule,
      );
    return turn;
  }

  /**
   * Appends one of the turn's events: it gets the next seq and is stored in
   * order. A stream chunk goes out live at once and is buffered, to be stored
   * coalesced with the chunks after it: then nothing is returned (its seq is
   * given when its run is stored); anything else returns the event as stored. A kind above the
   * writer's level is not stored (nothing is returned); a stream chunk of it still goes out live, with
   * the seq of the next stored event.
   */
  append(sessionId: string, turnId: number, record: TurnRecord): EngineEvent | undefined {
    const key = `${turnKey(sessionId, turnId)}`;
    const now = monotonicNow();
    let turn = this.#turns.get(key);
    if (!turn) {
      turn = this.#newTurn(sessionId, turnId, 0, now, 0);
      this.#turns.set(key, turn);
    }
    if (!this.#recorded.has(record.kind)) {
      if (record.kind === "STREAM_CHUNK") this.#sendLive(turn, record.payload, turn.seq, turn.seq - 1, now);
      return undefined;
    }
    if (record.kind === "STREAM_CHUNK" && turn.chunks && record.payload.chunks === undefined) {
      // Adding may store the runs buffered before (when the chunk does not continue its stream's run): the
      // buffered runs then get the seqs from `turn.seq` on, in order, and every event before them comes first.
      const place = turn.chunks.add(record.payload, now);
      this.#sendLive(turn, record.payload, turn.seq + place, turn.seq - 1, now);
      if (turn.chunks.full) turn.chunks.flush();
      return undefined;
    }
    turn.chunks?.flush(); // the chunks before this event are stored before it
    const event = this.#store(turn, record, now);
    if (event.kind === "STREAM_CHUNK") this.#sendLive(turn, event.payload, event.seq, event.seq - 1, now);
    return event;
  }

  /** Stores buffered runs of stream chunks, in order, each one STREAM_CHUNK (`chunks` absent for a single one). */
  #storeRuns(turn: OpenTurn, runs: readonly CoalescedChunk[]): void {
    for (const run of runs) this.#store(turn, { kind: "STREAM_CHUNK", payload: runPayload(run) }, run.ts);
  }

  /** Sends one chunk live (`live`), with the seq of the stored event that will hold it. */
  #sendLive(turn: OpenTurn, chunk: StreamChunk, seq: number, afterSeq: number, now: number): void {
    if (!this.#options.live || turn.fenced) return;
    const { stream_id, index, delta } = chunk;
    sendLiveChunk(this.#options.live, {
      session_id: turn.sessionId,
      turn_id: turn.turnId,
      seq,
      ts_monotonic: now,
      kind: "STREAM_CHUNK",
      payload: { stream_id, index, delta },
      after_seq: afterSeq,
      writer: turn.writer,
    });
  }

  /** Gives the event the turn's next seq and queues it to be stored. */
  #store(turn: OpenTurn, record: TurnRecord, now: number): EngineEvent {
    const { sessionId, turnId } = turn;
    const seq = turn.seq++;
    // A turn's time counts from its start, not from the TURN_QUEUED before it (time spent waiting for a place).
    if (record.kind === "TURN_STARTED") turn.startedAt = now;
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
    // A turn's first event, and its start, wait for the session's previous turn's end to be stored: a turn queued
    // (TURN_QUEUED stored) while the one before it ran must not start in the log before that one ends.
    if (turn.pending.length === 0 || record.kind === "TURN_STARTED") turn.after = this.#sessionTails.get(sessionId);
    const stored = new Promise<PubAck | undefined>((settle, fail) => {
      turn.queue.push({ event, data: encodeRecord(event), settle, fail });
    });
    turn.pending.push(stored);
    if (record.kind === "TURN_COMPLETED") this.#setSessionTail(sessionId, stored);
    if (!turn.draining) void this.#drain(turn);
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

  /** Publishes the turn's queue in order, batch by batch, until it is empty. */
  async #drain(turn: OpenTurn): Promise<void> {
    turn.draining = true;
    try {
      // The events appended in the same run of code as this one (a stage's end and the next one's start) go
      // out with it, as one batch: the queue is taken a microtask later.
      await undefined;
      if (turn.after) {
        await turn.after;
        turn.after = undefined;
      }
      while (turn.queue.length > 0) {
        if (turn.after) {
          await turn.after; // set by an event appended while this drain was under way (its TURN_STARTED)
          turn.after = undefined;
        }
        if (turn.fenced || turn.broken !== undefined) {
          for (const queued of turn.queue.splice(0)) {
            if (turn.fenced) queued.settle(undefined);
            else queued.fail(turn.broken);
          }
          break;
        }
        await publishBatch(this.#publisher, turn, nextBatch(turn), this.#options.onFenced, this.#batches);
      }
    } finally {
      turn.draining = false;
    }
  }

  /**
   * Resolves once every event appended to the turn so far is stored (a
   * durable step goes on only then); rejects when one was not, or another
   * writer holds the turn.
   */
  async flushed(sessionId: string, turnId: number): Promise<void> {
    const key = `${turnKey(sessionId, turnId)}`;
    const turn = this.#turns.get(key);
    if (!turn) return;
    turn.chunks?.flush();
    await Promise.all([...turn.pending]);
    if (turn.fenced) throw new EventLogError(`turn ${key} is being written by another runner`);
  }

  /** Waits for every event of the turn to be stored, then forgets the turn. Returns how many were stored. */
  async finish(sessionId: string, turnId: number): Promise<number> {
    const key = `${turnKey(sessionId, turnId)}`;
    const turn = this.#turns.get(key);
    if (!turn) return 0;
    turn.chunks?.flush();
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

  /**
   * Resolves once every event appended so far, of every turn, is stored or failed: a runner that stops
   * waits for it before it lets its sessions go, so the runner that takes a turn over reads all of it.
   */
  async settled(): Promise<void> {
    for (const turn of this.#turns.values()) turn.chunks?.flush();
    await Promise.allSettled([...this.#turns.values()].flatMap((turn) => turn.pending));
  }

  /** True when another writer holds the turn (see the class's fencing): this one stored nothing more of it. */
  isFenced(sessionId: string, turnId: number): boolean {
    return this.#turns.get(`${turnKey(sessionId, turnId)}`)?.fenced ?? false;
  }

  /** Forgets a turn without waiting (it was interrupted by a takeover elsewhere). */
  abandon(sessionId: string, turnId: number): void {
    const key = `${turnKey(sessionId, turnId)}`;
    this.#turns.get(key)?.chunks?.discard();
    this.#turns.delete(key);
  }
}
