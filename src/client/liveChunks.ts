import type { NatsConnection, Subscription } from "@nats-io/nats-core";
import { subjects } from "../bus/subjects.ts";
import { decodeMessage } from "../bus/wire.ts";
import { type EngineEvent, LiveChunk } from "../contracts/events.ts";

type Chunk = Extract<EngineEvent, { kind: "STREAM_CHUNK" }>;

/** Where a stream stands for the reader: the chunks given so far, and how much of its text each side covered. */
interface StreamPlace {
  /** The next chunk index to give: every chunk before it was given, live or from the log. */
  nextIndex: number;
  /** Characters of the stream's text given so far (live or stored). */
  given: number;
  /** Characters of the stream's text the stored chunks read so far hold. */
  stored: number;
}

/**
 * Merges a turn's live stream chunks (core NATS, one per chunk, at most once)
 * with its stored events (the log, in `seq` order, chunks coalesced) into one
 * sequence for `emit`, in which each piece of a stream's text appears once,
 * in order, whether it was seen live or only in the log: joined, a stream's
 * deltas are the stored text.
 *
 * A live chunk is given as soon as every stored event before it (its
 * `after_seq`) was given and its stream's earlier chunks were; it carries the
 * seq of the stored event that will hold it. A stored chunk gives only what was
 * not given live (nothing, when its chunks all were). Live chunks missed (the
 * subscription came late, a message lost on a reconnect) are given from the
 * log. A stream that starts again (STREAM_START) counts from index 0 again; a
 * turn taken over by another writer makes the first writer's live chunks void.
 */
export class LiveChunkMerger {
  readonly #emit: (event: EngineEvent) => void;
  /** The seq of the next stored event. */
  #nextSeq = 0;
  readonly #streams = new Map<string, StreamPlace>();
  /** Live chunks waiting for the stored events before them, or for earlier chunks of their stream. */
  #held: LiveChunk[] = [];
  #writer: string | null = null;
  readonly #retired = new Set<string>();

  constructor(emit: (event: EngineEvent) => void) {
    this.#emit = emit;
  }

  /** A stored event, in `seq` order. */
  stored(event: EngineEvent): void {
    if (event.seq < this.#nextSeq) return; // given already
    this.#nextSeq = event.seq + 1;
    if (event.kind === "STREAM_START")
      this.#streams.set(event.payload.stream_id, { nextIndex: 0, given: 0, stored: 0 });
    if (event.kind === "STREAM_CHUNK") this.#storedChunk(event);
    else this.#emit(event);
    this.#release();
  }

  /** A live chunk, as it arrives. */
  live(chunk: LiveChunk): void {
    if (this.#retired.has(chunk.writer)) return;
    if (this.#writer !== chunk.writer) {
      // Another writer took the turn over: the live chunks of the one before are void, save those already given.
      if (this.#writer !== null) {
        this.#retired.add(this.#writer);
        this.#held = this.#held.filter((held) => held.writer !== this.#writer);
      }
      this.#writer = chunk.writer;
    }
    if (chunk.seq < this.#nextSeq) return; // its stored event was given
    this.#held.push(chunk);
    this.#release();
  }

  #place(streamId: string): StreamPlace {
    let place = this.#streams.get(streamId);
    if (!place) {
      place = { nextIndex: 0, given: 0, stored: 0 };
      this.#streams.set(streamId, place);
    }
    return place;
  }

  /** Gives what of a stored chunk was not given live. */
  #storedChunk(event: Chunk): void {
    const { stream_id, index, delta } = event.payload;
    const end = index + (event.payload.chunks ?? 1);
    const place = this.#place(stream_id);
    if (end > place.nextIndex) {
      if (index >= place.nextIndex) this.#emit(event);
      else {
        // Its first chunks were given live: the rest of its text, from where they ended.
        const rest = delta.slice(Math.min(Math.max(place.given - place.stored, 0), delta.length));
        const chunks = end - place.nextIndex;
        this.#emit({
          ...event,
          payload: { stream_id, index: place.nextIndex, delta: rest, ...(chunks > 1 ? { chunks } : {}) },
        });
      }
      place.nextIndex = end;
      place.given = place.stored + delta.length;
    }
    place.stored += delta.length;
  }

  /** Gives every held live chunk whose turn has come, dropping those the log gave already. */
  #release(): void {
    for (let progress = true; progress; ) {
      progress = false;
      this.#held = this.#held.filter((chunk) => {
        if (chunk.seq < this.#nextSeq) return false;
        if (chunk.after_seq >= this.#nextSeq) return true; // a stored event before it is still to come
        const place = this.#place(chunk.payload.stream_id);
        if (chunk.payload.index > place.nextIndex) return true; // an earlier chunk of its stream is still missing
        if (chunk.payload.index === place.nextIndex) {
          const { writer: _writer, after_seq: _after, ...event } = chunk;
          this.#emit(event);
          place.nextIndex += 1;
          place.given += chunk.payload.delta.length;
          progress = true;
        }
        return false;
      });
    }
  }
}

/**
 * Subscribes a turn's live chunks (`conclave.live.<session>.<turn>`) for a
 * merger. Best effort: a connection not allowed to subscribe (an older
 * nats.conf), or a message that is not a LiveChunk, leaves the reader with the
 * log, which holds every chunk anyway. Unsubscribe when the turn is over.
 */
export function subscribeLiveChunks(
  nc: NatsConnection,
  sessionId: string,
  turnId: number,
  merger: LiveChunkMerger,
): Subscription | null {
  try {
    return nc.subscribe(subjects.liveChunks(sessionId, turnId), {
      callback: (error, msg) => {
        if (error) return;
        try {
          merger.live(decodeMessage(msg, LiveChunk, "live chunk"));
        } catch {
          // Not a live chunk: the log has the turn's chunks.
        }
      },
    });
  } catch {
    return null; // the connection is closed: the follow reports it
  }
}
