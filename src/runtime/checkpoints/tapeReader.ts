/**
 * Reading a session's tape: its turns, its ledger events and the schedule
 * log, after a cut and up to a bound, as the steps fold.ts folds. The only
 * I/O of the checkpoints.
 */
import { DeliverPolicy, type JetStreamClient, type JetStreamManager } from "@nats-io/jetstream";
import { isStreamNotFound } from "../../bus/errors.ts";
import { eventStreamOfSubject, streams, subjects } from "../../bus/subjects.ts";
import { parseStoredEvents, type RawEvent } from "../../contracts/eventBatch.ts";
import type { EngineEvent } from "../../contracts/events.ts";
import { LedgerEvent } from "../../contracts/ledger.ts";
import { orderedConsumer, releaseConsumer } from "../../eventlog/consumers.ts";
import { eventStreamCount } from "../../eventlog/eventStreams.ts";
import { PULL_EXPIRES_MS } from "../../eventlog/streams.ts";
import { ScheduleEvent } from "../../schedules/intent.ts";
import type { TapeStep } from "./fold.ts";
import type { TapeCut } from "./state.ts";

const decoder = new TextDecoder();

/** One stored message: its stream sequence, its JSON (undefined when it is not JSON), when the server stored it (ms). */
interface Stored {
  seq: number;
  json: unknown;
  time: number;
}

/** The NATS clients a tape read uses. */
export interface TapeClients {
  js: JetStreamClient;
  jsm: JetStreamManager;
}

/**
 * The messages of `stream` on `filter` with a sequence after `afterSeq`,
 * through `lastSeq` (what was stored when the read began), in log order;
 * `until` stops the read at the first message it refuses (not returned).
 */
async function readStored(
  { js, jsm }: TapeClients,
  stream: string,
  filter: string,
  afterSeq: number,
  until?: (message: Stored) => boolean,
): Promise<Stored[]> {
  let last: number;
  try {
    const info = await jsm.streams.info(stream, { subjects_filter: filter });
    last = info.state.last_seq;
    const stored = Object.values(info.state.subjects ?? {}).reduce((sum, count) => sum + count, 0);
    if (stored === 0 || last <= afterSeq) return [];
  } catch (error) {
    if (isStreamNotFound(error)) return [];
    throw error;
  }
  const consumer = await orderedConsumer(js, stream, {
    filter_subjects: filter,
    deliver_policy: afterSeq === 0 ? DeliverPolicy.All : DeliverPolicy.StartSequence,
    ...(afterSeq === 0 ? {} : { opt_start_seq: afterSeq + 1 }),
  });
  if ((await consumer.info(true)).num_pending === 0) {
    await releaseConsumer(consumer);
    return [];
  }
  const found: Stored[] = [];
  const messages = await consumer.consume({ expires: PULL_EXPIRES_MS });
  try {
    for await (const msg of messages) {
      if (msg.seq > last) break;
      let json: unknown;
      try {
        json = JSON.parse(decoder.decode(msg.data));
      } catch {
        json = undefined;
      }
      const message = { seq: msg.seq, json, time: Math.floor(Number(msg.info.timestampNanos) / 1_000_000) };
      if (until && !until(message)) break;
      found.push(message);
      if (msg.info.pending === 0 || msg.seq >= last) break;
    }
  } finally {
    void messages.stop();
    await releaseConsumer(consumer);
  }
  return found;
}

/** A turn's events in `seq` order (the valid ones), and the stored message that ends it. */
export interface StoredTurn {
  turn_id: number;
  events: EngineEvent[];
  /** Stream sequence and time of its TURN_COMPLETED, else of its last message (0 when it has none). */
  end: { seq: number; time: number };
}

/** A stored message's events (one, or a batch's) of `kinds` (TURN_COMPLETED always is) that are valid. */
function eventsOf(message: Stored, kinds: ReadonlySet<string> | undefined, turns?: TurnRange): EngineEvent[] {
  if (message.json === undefined) return [];
  const wanted = (raw: RawEvent) =>
    (!turns || (typeof raw.turn_id === "number" && raw.turn_id >= turns.first && raw.turn_id <= turns.last)) &&
    (!kinds || raw.kind === "TURN_COMPLETED" || kinds.has(String(raw.kind)));
  return parseStoredEvents(message.json, `event at stream seq ${message.seq}`, wanted).events;
}

/** The turns a read keeps (inclusive). */
type TurnRange = { first: number; last: number };

/** A turn from its stored events: in `seq` order, ended by its TURN_COMPLETED (else its last message). */
function storedTurn(turnId: number, events: { event: EngineEvent; seq: number; time: number }[]): StoredTurn {
  events.sort((a, b) => a.event.seq - b.event.seq);
  // TURN_COMPLETED, not the last message: a rollback stored later must not move the turn's end.
  const ending = events.find(({ event }) => event.kind === "TURN_COMPLETED") ?? events.at(-1);
  return {
    turn_id: turnId,
    events: events.map(({ event }) => event),
    end: ending ? { seq: ending.seq, time: ending.time } : { seq: 0, time: 0 },
  };
}

/**
 * One turn of the session as stored. With `kinds`, only events of those kinds are parsed and kept (a
 * fold's read: parsing every event of a turn again is most of its cost); TURN_COMPLETED always is.
 */
export async function readTurn(
  clients: TapeClients,
  sessionId: string,
  turnId: number,
  kinds?: ReadonlySet<string>,
): Promise<StoredTurn> {
  const filter = subjects.turnEvents(sessionId, turnId, await eventStreamCount(clients.jsm));
  const stored = await readStored(clients, eventStreamOfSubject(filter), filter, 0);
  const events: { event: EngineEvent; seq: number; time: number }[] = [];
  for (const message of stored)
    for (const event of eventsOf(message, kinds)) events.push({ event, seq: message.seq, time: message.time });
  return storedTurn(turnId, events);
}

/**
 * The session's turns `first`…`last`, read in one pass over its turns' subjects from stream sequence
 * `afterSeq` on (where the turns before `first` end: a session's turn is stored after the one before
 * it ended); events of other turns met on the way (a rollback stored later) are left out. `tally`
 * counts the stored messages read.
 */
export async function readTurns(
  clients: TapeClients,
  sessionId: string,
  range: { afterSeq: number; first: number; last: number },
  kinds?: ReadonlySet<string>,
  tally?: { read: number },
): Promise<StoredTurn[]> {
  if (range.last < range.first) return [];
  const filter = subjects.sessionEvents(sessionId, await eventStreamCount(clients.jsm));
  const stored = await readStored(clients, eventStreamOfSubject(filter), filter, range.afterSeq);
  if (tally) tally.read += stored.length;
  const byTurn = new Map<number, { event: EngineEvent; seq: number; time: number }[]>();
  for (const message of stored)
    for (const event of eventsOf(message, kinds, range)) {
      const events = byTurn.get(event.turn_id) ?? [];
      events.push({ event, seq: message.seq, time: message.time });
      byTurn.set(event.turn_id, events);
    }
  return Array.from({ length: range.last - range.first + 1 }, (_, index) =>
    storedTurn(range.first + index, byTurn.get(range.first + index) ?? []),
  );
}

/** Where a read of ledger and schedule events stops (absent: everything stored). */
export interface TapeBound {
  /** The ledger events through this stream sequence; absent: all stored. */
  events_seq?: number;
  /** The schedule events stored up to this time (ms); absent: all stored. */
  schedules_time?: number;
}

/** The ledger events, then the schedule log events, after `cut` and through `bound` (turns are read with readTurn). */
export async function readLogSteps(
  clients: TapeClients,
  sessionId: string,
  cut: TapeCut,
  bound: TapeBound,
): Promise<TapeStep[]> {
  const steps: TapeStep[] = [];
  const ledgerFilter = subjects.ledgerEvents(sessionId, await eventStreamCount(clients.jsm));
  const ledger = await readStored(
    clients,
    eventStreamOfSubject(ledgerFilter),
    ledgerFilter,
    cut.events_seq,
    (message) => bound.events_seq === undefined || message.seq <= bound.events_seq,
  );
  for (const message of ledger) {
    const parsed = LedgerEvent.safeParse(message.json);
    // A stored message that is not a ledger event is skipped by every fold alike (LedgerStore does the same).
    if (parsed.success) steps.push({ kind: "ledger", seq: message.seq, event: parsed.data });
  }
  const schedules = await readStored(
    clients,
    streams.schedules,
    subjects.allScheduleLog,
    cut.schedules_seq,
    (message) => bound.schedules_time === undefined || message.time <= bound.schedules_time,
  );
  for (const message of schedules) {
    const parsed = ScheduleEvent.safeParse(message.json);
    steps.push({ kind: "schedule", seq: message.seq, event: parsed.success ? parsed.data : null });
  }
  return steps;
}
