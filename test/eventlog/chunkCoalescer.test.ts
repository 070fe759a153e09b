import { describe, expect, it } from "vitest";
import { isConclaveError } from "../../src/errors.ts";
import {
  ChunkCoalescer,
  type CoalescedChunk,
  DEFAULT_STREAM_CHUNK_BYTES,
  DEFAULT_STREAM_CHUNK_MS,
  type Schedule,
  streamChunkSettings,
} from "../../src/eventlog/chunkCoalescer.ts";

/** A clock the test turns by hand: what was scheduled runs only when `fire` is called. */
function manualSchedule() {
  const timers: { run: () => void; delayMs: number; cancelled: boolean }[] = [];
  const schedule: Schedule = (run, delayMs) => {
    const timer = { run, delayMs, cancelled: false };
    timers.push(timer);
    return () => {
      timer.cancelled = true;
    };
  };
  return {
    schedule,
    /** The timers set and not cancelled (nor fired). */
    get pending() {
      return timers.filter((timer) => !timer.cancelled);
    },
    fire() {
      for (const timer of timers.splice(0)) if (!timer.cancelled) timer.run();
    },
  };
}

function coalescer(options: { chunkMs?: number; chunkBytes?: number } = {}) {
  const clock = manualSchedule();
  const stored: CoalescedChunk[][] = [];
  const chunks = new ChunkCoalescer(
    { chunkMs: options.chunkMs ?? 25, chunkBytes: options.chunkBytes ?? 4_096 },
    (runs) => stored.push(runs),
    clock.schedule,
  );
  return { chunks, stored, clock };
}

const chunk = (stream_id: string, index: number, delta: string) => ({ stream_id, index, delta });

describe("chunk coalescer", () => {
  it("stores a stream's run as one chunk once its first chunk is chunkMs old", () => {
    const { chunks, stored, clock } = coalescer({ chunkMs: 25 });
    expect(chunks.add(chunk("default", 0, "Hello"), 1)).toBe(0);
    expect(chunks.add(chunk("default", 1, ", "), 2)).toBe(0);
    expect(chunks.add(chunk("default", 2, "world"), 3)).toBe(0);
    expect(clock.pending.map((timer) => timer.delayMs)).toEqual([25]); // one timer, from the first chunk
    expect(stored).toEqual([]);
    clock.fire();
    expect(stored).toEqual([[{ stream_id: "default", index: 0, delta: "Hello, world", chunks: 3, ts: 1 }]]);
    expect(chunks.size).toBe(0);
  });

  it("keeps one run per stream, in the order they began, and says which place a chunk's run has", () => {
    const { chunks, stored, clock } = coalescer();
    expect(chunks.add(chunk("thinking", 0, "hmm"), 1)).toBe(0);
    expect(chunks.add(chunk("default", 0, "Hi"), 2)).toBe(1);
    expect(chunks.add(chunk("thinking", 1, "…"), 3)).toBe(0);
    expect(chunks.add(chunk("default", 1, " there"), 4)).toBe(1);
    clock.fire();
    expect(stored).toEqual([
      [
        { stream_id: "thinking", index: 0, delta: "hmm…", chunks: 2, ts: 1 },
        { stream_id: "default", index: 0, delta: "Hi there", chunks: 2, ts: 2 },
      ],
    ]);
  });

  it("is full once the buffered text reaches chunkBytes (UTF-8 bytes, every stream)", () => {
    const { chunks, stored, clock } = coalescer({ chunkBytes: 8 });
    chunks.add(chunk("default", 0, "abc"), 1);
    chunks.add(chunk("agent:notes", 0, "dé"), 2); // 3 bytes
    expect(chunks.full).toBe(false);
    chunks.add(chunk("default", 1, "xy"), 3);
    expect(chunks.full).toBe(true);
    chunks.flush();
    expect(stored).toHaveLength(1);
    expect(stored[0]?.map((run) => run.delta)).toEqual(["abcxy", "dé"]);
    expect(chunks.full).toBe(false);
    expect(clock.pending).toEqual([]); // the flush cancelled the timer
  });

  it("stores the buffered runs first when a chunk does not continue its stream's run", () => {
    const { chunks, stored } = coalescer();
    chunks.add(chunk("default", 0, "a"), 1);
    chunks.add(chunk("default", 1, "b"), 2);
    // The stream starts over (a takeover's restarted stream counts from 0 again).
    expect(chunks.add(chunk("default", 0, "A"), 3)).toBe(0);
    expect(stored).toEqual([[{ stream_id: "default", index: 0, delta: "ab", chunks: 2, ts: 1 }]]);
    chunks.flush();
    expect(stored[1]).toEqual([{ stream_id: "default", index: 0, delta: "A", chunks: 1, ts: 3 }]);
  });

  it("flushes on demand (the writer does before any other event), and not again when empty", () => {
    const { chunks, stored, clock } = coalescer();
    chunks.add(chunk("default", 0, "one"), 1);
    chunks.flush();
    chunks.flush();
    clock.fire(); // the timer was cancelled
    expect(stored).toEqual([[{ stream_id: "default", index: 0, delta: "one", chunks: 1, ts: 1 }]]);
  });

  it("drops what it holds when discarded", () => {
    const { chunks, stored, clock } = coalescer();
    chunks.add(chunk("default", 0, "lost"), 1);
    chunks.discard();
    clock.fire();
    chunks.flush();
    expect(stored).toEqual([]);
  });
});

describe("stream chunk settings", () => {
  it("defaults to 25 ms and 4 KiB, reads the environment, and lets given options win", () => {
    expect(streamChunkSettings({}, {})).toEqual({
      chunkMs: DEFAULT_STREAM_CHUNK_MS,
      chunkBytes: DEFAULT_STREAM_CHUNK_BYTES,
    });
    expect(DEFAULT_STREAM_CHUNK_MS).toBe(25);
    expect(DEFAULT_STREAM_CHUNK_BYTES).toBe(4_096);
    const env = { CONCLAVE_STREAM_CHUNK_MS: "0", CONCLAVE_STREAM_CHUNK_BYTES: "512" };
    expect(streamChunkSettings({}, env)).toEqual({ chunkMs: 0, chunkBytes: 512 });
    expect(streamChunkSettings({ chunkMs: 10 }, env)).toEqual({ chunkMs: 10, chunkBytes: 512 });
  });

  it("refuses what is not a whole number in range, naming where it came from", () => {
    const refusal = (run: () => unknown): string => {
      try {
        run();
      } catch (error) {
        if (isConclaveError(error) && error.code === "config") return error.message;
        throw error;
      }
      throw new Error("accepted");
    };
    expect(refusal(() => streamChunkSettings({}, { CONCLAVE_STREAM_CHUNK_MS: "soon" }))).toMatch(
      /^CONCLAVE_STREAM_CHUNK_MS="soon" is invalid: must be a whole number from 0 to 60000/,
    );
    expect(refusal(() => streamChunkSettings({ chunkBytes: 0 }, {}))).toMatch(/^chunkBytes: expected a whole number/);
    expect(refusal(() => streamChunkSettings({ chunkMs: -1 }, {}))).toMatch(/^chunkMs:/);
    expect(refusal(() => streamChunkSettings({}, { CONCLAVE_STREAM_CHUNK_BYTES: "1e9" }))).toMatch(/65536/);
  });
});
