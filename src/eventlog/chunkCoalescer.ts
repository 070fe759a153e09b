/**
 * Stream chunks stored coalesced: a turn's STREAM_CHUNK events (the voice's
 * reply word by word, agents' named streams) are most of what it stores, one
 * JetStream publish each. The writer buffers them per stream and stores each
 * buffered run as one STREAM_CHUNK (`delta` the run's text, `chunks` how many
 * it holds), while every chunk still goes out live on core NATS. See
 * EventLogWriter.
 */
import { setting } from "../config/load.ts";
import { CONFIG_SCHEMA } from "../config/schema.ts";
import { ConclaveError } from "../errors.ts";

/** How a turn's stream chunks are coalesced before they are stored. */
export interface StreamChunkOptions {
  /**
   * How long the first chunk of a buffered run may wait, in ms, before the run is stored. 0 stores every chunk
   * as its own event (no coalescing). Default 25; env `CONCLAVE_STREAM_CHUNK_MS`.
   */
  chunkMs: number;
  /** Buffered text (UTF-8 bytes, all the turn's streams) that stores the runs at once. Default 4096; env `CONCLAVE_STREAM_CHUNK_BYTES`. */
  chunkBytes: number;
}

export const DEFAULT_STREAM_CHUNK_MS = CONFIG_SCHEMA.CONCLAVE_STREAM_CHUNK_MS.default;
export const DEFAULT_STREAM_CHUNK_BYTES = CONFIG_SCHEMA.CONCLAVE_STREAM_CHUNK_BYTES.default;
/** The most either setting accepts: a minute, and 64 KiB (a stored event stays well under NATS's max_payload). */
export const MAX_STREAM_CHUNK_MS = 60_000;
export const MAX_STREAM_CHUNK_BYTES = 65_536;

/** The environment variables of StreamChunkOptions (whole numbers). */
export const STREAM_CHUNK_ENV = {
  chunkMs: "CONCLAVE_STREAM_CHUNK_MS",
  chunkBytes: "CONCLAVE_STREAM_CHUNK_BYTES",
} as const;

/**
 * The coalescing in force: each field from `given`, else its environment
 * variable (src/config/schema.ts), else its default. A value that is not a
 * whole number in range is a "config" ConclaveError naming it.
 */
export function streamChunkSettings(given: Partial<StreamChunkOptions> = {}, env = process.env): StreamChunkOptions {
  const read = (field: keyof StreamChunkOptions, min: number, max: number): number => {
    const value = given[field] ?? setting(env, STREAM_CHUNK_ENV[field]);
    if (!Number.isInteger(value) || value < min || value > max)
      throw new ConclaveError("config", `${field}: expected a whole number from ${min} to ${max}`);
    return value;
  };
  return {
    chunkMs: read("chunkMs", 0, MAX_STREAM_CHUNK_MS),
    chunkBytes: read("chunkBytes", 1, MAX_STREAM_CHUNK_BYTES),
  };
}

/** One live chunk, as the turn recorded it. */
export interface StreamChunk {
  stream_id: string;
  index: number;
  delta: string;
}

/** A buffered run of one stream: what is stored as one STREAM_CHUNK. */
export interface CoalescedChunk {
  stream_id: string;
  /** Its first chunk's index. */
  index: number;
  /** The chunks' text, joined. */
  delta: string;
  /** How many chunks it holds. */
  chunks: number;
  /** When its first chunk was recorded (the stored event's `ts_monotonic`). */
  ts: number;
}

/** A run as its stored STREAM_CHUNK's payload (`chunks` absent for a single chunk). */
export const runPayload = ({ stream_id, index, delta, chunks }: CoalescedChunk) => ({
  stream_id,
  index,
  delta,
  ...(chunks > 1 ? { chunks } : {}),
});

/** Runs `run` after `delayMs`; the function returned cancels it. A seam: tests drive time themselves. */
export type Schedule = (run: () => void, delayMs: number) => () => void;

/** setTimeout, not keeping the process alive for it. */
export const timerSchedule: Schedule = (run, delayMs) => {
  const timer = setTimeout(run, delayMs);
  timer.unref?.();
  return () => clearTimeout(timer);
};

interface Run {
  /** Its place among the buffered runs: they are only ever emptied all at once. */
  place: number;
  stream_id: string;
  index: number;
  parts: string[];
  ts: number;
}

/**
 * One turn's buffered stream chunks, a run per stream, in the order the runs
 * began. `flush` hands them all to `store` in that order (the writer gives
 * each the next seq), so a chunk's place among the runs says which seq will
 * hold it. Flushed when the buffered text reaches `chunkBytes` (the caller
 * checks `full`), when `chunkMs` passed since the first chunk buffered, and by
 * the writer before any other event of the turn and when the turn is flushed.
 */
export class ChunkCoalescer {
  readonly #options: StreamChunkOptions;
  readonly #store: (runs: CoalescedChunk[]) => void;
  readonly #schedule: Schedule;
  readonly #runs = new Map<string, Run>();
  #bytes = 0;
  #cancelTimer: (() => void) | null = null;

  constructor(options: StreamChunkOptions, store: (runs: CoalescedChunk[]) => void, schedule = timerSchedule) {
    this.#options = options;
    this.#store = store;
    this.#schedule = schedule;
  }

  /**
   * Buffers a chunk and returns its run's place among the buffered runs (0:
   * the first to be stored). A chunk that does not continue its stream's run
   * (its index is not the next one) stores what is buffered first, so a stored
   * run always holds consecutive chunks.
   */
  add(chunk: StreamChunk, ts: number): number {
    const run = this.#runs.get(chunk.stream_id);
    if (run && run.index + run.parts.length !== chunk.index) this.flush();
    let current = this.#runs.get(chunk.stream_id);
    if (!current) {
      current = { place: this.#runs.size, stream_id: chunk.stream_id, index: chunk.index, parts: [], ts };
      this.#runs.set(chunk.stream_id, current);
    }
    current.parts.push(chunk.delta);
    this.#bytes += Buffer.byteLength(chunk.delta, "utf8");
    this.#cancelTimer ??= this.#schedule(() => {
      this.#cancelTimer = null;
      this.flush();
    }, this.#options.chunkMs);
    return current.place;
  }

  /** The buffered text reached `chunkBytes`: time to flush. */
  get full(): boolean {
    return this.#bytes >= this.#options.chunkBytes;
  }

  /** How many runs are buffered. */
  get size(): number {
    return this.#runs.size;
  }

  /** Hands every buffered run to `store`, in the order they began, and empties the buffer. */
  flush(): void {
    this.#cancelTimer?.();
    this.#cancelTimer = null;
    if (this.#runs.size === 0) return;
    const runs = [...this.#runs.values()].map(
      (run): CoalescedChunk => ({
        stream_id: run.stream_id,
        index: run.index,
        delta: run.parts.join(""),
        chunks: run.parts.length,
        ts: run.ts,
      }),
    );
    this.#runs.clear();
    this.#bytes = 0;
    this.#store(runs);
  }

  /** Drops what is buffered without storing it (the turn was abandoned). */
  discard(): void {
    this.#cancelTimer?.();
    this.#cancelTimer = null;
    this.#runs.clear();
    this.#bytes = 0;
  }
}
