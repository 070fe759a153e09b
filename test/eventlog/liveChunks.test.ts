import { describe, expect, it } from "vitest";
import { LiveChunkMerger } from "../../src/client/liveChunks.ts";
import type { EngineEvent, LiveChunk } from "../../src/contracts/events.ts";

/** A merger of one turn and what it gave, with builders for its stored events and live chunks. */
function merging() {
  const given: EngineEvent[] = [];
  const merger = new LiveChunkMerger((event) => given.push(event));
  const envelope = (seq: number) => ({ session_id: "s", turn_id: 1, seq, ts_monotonic: seq });
  const stored = {
    start: (seq: number, stream_id = "default") =>
      merger.stored({
        ...envelope(seq),
        kind: "STREAM_START",
        payload: { stream_id, content_type: "text/plain", attempt: 1 },
      }),
    chunk: (seq: number, index: number, delta: string, chunks?: number, stream_id = "default") =>
      merger.stored({
        ...envelope(seq),
        kind: "STREAM_CHUNK",
        payload: { stream_id, index, delta, ...(chunks === undefined ? {} : { chunks }) },
      }),
    other: (seq: number) =>
      merger.stored({ ...envelope(seq), kind: "TURN_STAGE_CHANGED", payload: { stage: "council" } }),
  };
  const live = (
    seq: number,
    afterSeq: number,
    index: number,
    delta: string,
    options: { stream_id?: string; writer?: string } = {},
  ) => {
    const chunk: LiveChunk = {
      ...envelope(seq),
      kind: "STREAM_CHUNK",
      payload: { stream_id: options.stream_id ?? "default", index, delta },
      after_seq: afterSeq,
      writer: options.writer ?? "w.1",
    };
    merger.live(chunk);
  };
  const text = (stream_id = "default") =>
    given
      .flatMap((event) =>
        event.kind === "STREAM_CHUNK" && event.payload.stream_id === stream_id ? [event.payload.delta] : [],
      )
      .join("");
  const kinds = () =>
    given.map((event) => (event.kind === "STREAM_CHUNK" ? `chunk:${event.payload.delta}` : event.kind));
  return { given, stored, live, text, kinds };
}

describe("live chunks merged with the stored ones", () => {
  it("gives each live chunk as it comes and nothing more when the stored chunk holding them arrives", () => {
    const turn = merging();
    turn.stored.start(0);
    turn.live(1, 0, 0, "Hello");
    turn.live(1, 0, 1, ", world");
    expect(turn.kinds()).toEqual(["STREAM_START", "chunk:Hello", "chunk:, world"]);
    turn.stored.chunk(1, 0, "Hello, world", 2);
    turn.stored.other(2);
    expect(turn.kinds()).toEqual(["STREAM_START", "chunk:Hello", "chunk:, world", "TURN_STAGE_CHANGED"]);
    // A live chunk has the seq of the stored event that holds it.
    expect(turn.given.map((event) => event.seq)).toEqual([0, 1, 1, 2]);
  });

  it("gives the stored chunks as they are to a reader that saw nothing live (a late joiner, a replay)", () => {
    const turn = merging();
    turn.stored.start(0);
    turn.stored.chunk(1, 0, "Hello, world", 2);
    turn.stored.chunk(2, 2, "!");
    expect(turn.text()).toBe("Hello, world!");
    expect(turn.given).toHaveLength(3);
  });

  it("holds a live chunk until the stored events before it are given", () => {
    const turn = merging();
    turn.live(1, 0, 0, "early"); // before its stream's STREAM_START came from the log
    expect(turn.given).toEqual([]);
    turn.stored.start(0);
    expect(turn.kinds()).toEqual(["STREAM_START", "chunk:early"]);
  });

  it("drops a live chunk that comes after the stored one holding it", () => {
    const turn = merging();
    turn.stored.start(0);
    turn.stored.chunk(1, 0, "ab", 2);
    turn.live(1, 0, 0, "a");
    turn.live(1, 0, 1, "b");
    expect(turn.text()).toBe("ab");
    expect(turn.given).toHaveLength(2);
  });

  it("gives from the log what it missed live, and only that", () => {
    const turn = merging();
    turn.stored.start(0);
    turn.live(1, 0, 0, "one ");
    turn.live(1, 0, 1, "two ");
    // Chunk 2 is lost on the way; chunk 3 waits for it.
    turn.live(1, 0, 3, "four");
    expect(turn.text()).toBe("one two ");
    turn.stored.chunk(1, 0, "one two three four", 4);
    expect(turn.text()).toBe("one two three four");
    const last = turn.given.at(-1);
    expect(last?.kind === "STREAM_CHUNK" && last.payload).toEqual({
      stream_id: "default",
      index: 2,
      delta: "three four",
      chunks: 2,
    });
    // Live again from there on.
    turn.live(2, 1, 4, "!");
    expect(turn.text()).toBe("one two three four!");
  });

  it("gives a subscription that started mid-stream the start from the log, then goes on live", () => {
    const turn = merging();
    turn.stored.start(0);
    turn.live(1, 0, 2, "c"); // chunks 0 and 1 went out before it subscribed
    expect(turn.given).toHaveLength(1);
    turn.stored.chunk(1, 0, "abc", 3);
    turn.live(2, 1, 3, "d");
    turn.stored.chunk(2, 3, "d");
    expect(turn.text()).toBe("abcd");
    expect(turn.kinds()).toEqual(["STREAM_START", "chunk:abc", "chunk:d"]);
  });

  it("does not make one stream wait for another stored in the same flush", () => {
    const turn = merging();
    turn.stored.start(0, "thinking");
    turn.stored.start(1, "default");
    // Both runs are buffered together: thinking's will be seq 2, default's seq 3; both follow seq 1.
    turn.live(2, 1, 0, "hmm", { stream_id: "thinking" });
    turn.live(3, 1, 0, "Hi", { stream_id: "default" });
    expect(turn.text("thinking")).toBe("hmm");
    expect(turn.text("default")).toBe("Hi");
    turn.stored.chunk(2, 0, "hmm", undefined, "thinking");
    turn.stored.chunk(3, 0, "Hi", undefined, "default");
    expect(turn.given).toHaveLength(4);
  });

  it("counts a stream that starts again from 0 (a new attempt of the voice)", () => {
    const turn = merging();
    turn.stored.start(0);
    turn.live(1, 0, 0, "first");
    turn.stored.chunk(1, 0, "first");
    turn.stored.start(2);
    turn.live(3, 2, 0, "second");
    turn.stored.chunk(3, 0, "second");
    expect(turn.kinds()).toEqual(["STREAM_START", "chunk:first", "STREAM_START", "chunk:second"]);
  });

  it("drops the held live chunks of a writer that lost the turn once another writer's come", () => {
    const turn = merging();
    turn.stored.start(0);
    turn.live(1, 0, 0, "given", { writer: "a.1" });
    turn.live(3, 2, 1, "never stored", { writer: "a.1" }); // waits for seq 2, which the first writer never stored
    turn.stored.other(1);
    turn.stored.start(2); // the second writer starts the stream over
    turn.live(3, 2, 0, "again", { writer: "b.1" });
    turn.live(3, 2, 1, " and on", { writer: "a.1" }); // a late one of the first writer: void
    turn.stored.chunk(3, 0, "again");
    expect(turn.kinds()).toEqual(["STREAM_START", "chunk:given", "TURN_STAGE_CHANGED", "STREAM_START", "chunk:again"]);
  });
});
