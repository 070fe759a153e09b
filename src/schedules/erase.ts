import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import { encodeRecord } from "../bus/codec.ts";
import { isStreamNotFound } from "../bus/errors.ts";
import { streams, subjects } from "../bus/subjects.ts";
import { type EraseProgress, nextMessage, secureErase } from "../eventlog/eraseSecure.ts";
import { ScheduleEvent } from "./intent.ts";

/** What erasing a session's schedules did: the intents, and the log entries overwritten. */
export interface SchedulesErased {
  intents: string[];
  entries: number;
}

/**
 * Stops every schedule of `sessionId` (the first step of an erase,
 * src/runtime/intake/erase.ts): each intent's log gets an `erased` event,
 * which every runner's firing loop folds by dropping the intent (no fire
 * after it, and no copy of its text in memory). Returns the intents.
 */
export async function stopSessionSchedules(
  js: JetStreamClient,
  jsm: JetStreamManager,
  sessionId: string,
): Promise<string[]> {
  const intents = await intentsOf(jsm, sessionId);
  for (const id of intents) await markErased(js, jsm, id);
  return intents;
}

/**
 * Erases the session's schedules: stopped as above if not yet, then every
 * entry of each intent's log before its `erased` event (its creation holds
 * the text it submits) is overwritten and deleted. The `erased` event stays:
 * it holds the intent's id and a time only, and tells a runner still
 * catching up on the log that the intent is gone.
 */
export async function eraseSessionSchedules(
  js: JetStreamClient,
  jsm: JetStreamManager,
  sessionId: string,
  progress: EraseProgress,
): Promise<SchedulesErased> {
  const intents = await intentsOf(jsm, sessionId);
  let entries = 0;
  for (const id of intents) {
    const before = await markErased(js, jsm, id);
    entries += await secureErase(jsm, streams.schedules, subjects.scheduleLog(id), progress, { before });
  }
  return { intents, entries };
}

/** Appends the intent's `erased` event unless it is its last already: that event's sequence. */
async function markErased(js: JetStreamClient, jsm: JetStreamManager, id: string): Promise<number> {
  const last = await jsm.streams.getMessage(streams.schedules, { last_by_subj: subjects.scheduleLog(id) });
  const event = last ? ScheduleEvent.safeParse(safeJson(last.data)) : null;
  if (last && event?.success && event.data.kind === "erased") return last.seq;
  const erased: ScheduleEvent = { kind: "erased", at: Date.now(), id };
  return (await js.publish(subjects.scheduleLog(id), encodeRecord(erased))).seq;
}

/** The intents of the session: each intent's first log entry (its creation) names its session. */
async function intentsOf(jsm: JetStreamManager, sessionId: string): Promise<string[]> {
  const prefix = subjects.scheduleLog("");
  let known: string[];
  try {
    const info = await jsm.streams.info(streams.schedules, { subjects_filter: subjects.allScheduleLog });
    known = Object.keys(info.state.subjects ?? {});
  } catch (error) {
    if (isStreamNotFound(error)) return [];
    throw error;
  }
  const found: string[] = [];
  for (const subject of known) {
    const first = await nextMessage(jsm, streams.schedules, subject, 1);
    const event = first ? ScheduleEvent.safeParse(safeJson(first.data)) : null;
    if (event?.success && event.data.kind === "created" && event.data.intent.session_id === sessionId)
      found.push(subject.slice(prefix.length));
  }
  return found.sort();
}

function safeJson(data: Uint8Array): unknown {
  try {
    return JSON.parse(new TextDecoder().decode(data));
  } catch {
    return null;
  }
}
