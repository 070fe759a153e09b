import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import type { EngineEvent } from "../../contracts/events.ts";
import { readEvents } from "../../eventlog/reader.ts";
import type { StoredTurn } from "./delivery.ts";

/** What an earlier attempt stored of a turn, and where its subject stands in the stream (to fence on). */
export interface StoredForTakeover extends StoredTurn {
  events: EngineEvent[];
  /** The stream sequence of the turn's last stored message (0 when none): the next writer expects it. */
  lastStreamSeq: number;
}

/** Reads a turn's stored events before a runner takes it over. */
export async function readForTakeover(
  js: JetStreamClient,
  jsm: JetStreamManager,
  sessionId: string,
  turnId: number,
): Promise<StoredForTakeover> {
  let lastStreamSeq = 0;
  const events = await readEvents(js, jsm, sessionId, turnId, {
    onStreamSeq: (seq) => {
      lastStreamSeq = Math.max(lastStreamSeq, seq);
    },
  });
  return { events, kinds: events.map((event) => event.kind), lastSeq: events.at(-1)?.seq ?? -1, lastStreamSeq };
}
