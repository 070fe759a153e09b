/**
 * Deleting a session's messages so that their bytes leave the disk. A purge
 * by subject (and a KV purge) in nats-server 2.9 only marks messages deleted:
 * their bytes stay in the stream's block files. `$JS.API.STREAM.MSG.DELETE`
 * without `no_erase` overwrites the message's record in its block (subject,
 * headers and data) with random bytes and syncs the file: that is what an
 * erase uses, one message per call. See docs/operations.md, "Erasing a session".
 */
import type { JetStreamManager, MsgRequest, StoredMsg } from "@nats-io/jetstream";
import { isStreamNotFound } from "../bus/errors.ts";

/** Deletes sent at once (each is one request; they overlap up to this many). */
const DELETES_IN_FLIGHT = 32;
/** A progress line is logged every this many messages erased. */
export const ERASE_PROGRESS_EVERY = 1_000;

/** Where an erase reports how far it got, for a big session. */
export interface EraseProgress {
  /** Where the progress lines go (a Logger of src/telemetry/log.ts fits). */
  log: { info(message: string): void };
  /** What is being erased, for the progress lines (`session s: events`). */
  label: string;
}

/**
 * Overwrites and deletes every message of `stream` on subjects matching
 * `filter` (wildcards allowed) for which `matches` holds (default: all), in
 * stream order, with JetStream's secure delete. Returns how many were erased
 * (0 when the stream does not exist). `before` stops at that sequence.
 */
export async function secureErase(
  jsm: JetStreamManager,
  stream: string,
  filter: string,
  progress: EraseProgress,
  options: { matches?: (msg: StoredMsg) => boolean; before?: number } = {},
): Promise<number> {
  let seq = 0;
  /** The stream's last sequence, read only if the server's answers go back (see below). */
  let last: number | undefined;
  let erased = 0;
  let failure: unknown = null;
  const inFlight = new Set<Promise<void>>();
  const remove = (target: number) => {
    const deleting: Promise<void> = jsm.streams
      .deleteMessage(stream, target, true)
      .then(
        () => {},
        (error: unknown) => {
          // Gone already (a concurrent erase, the stream's limits): what was wanted.
          if (!/no message found/i.test(String(error))) failure ??= error;
        },
      )
      .finally(() => inFlight.delete(deleting));
    inFlight.add(deleting);
  };
  try {
    for (;;) {
      if (failure) throw failure;
      let msg = await nextMessage(jsm, stream, filter, seq + 1);
      if (msg && msg.seq <= seq) {
        // nats-server 2.9 can answer `next_by_subj` with an earlier message: going back would loop for ever.
        // The next sequence is read as it is instead, and its subject matched here.
        last ??= await lastSequence(jsm, stream);
        if (seq >= last) break;
        seq += 1;
        const exact = await messageAt(jsm, stream, seq);
        if (!exact || !subjectMatches(filter, exact.subject)) continue;
        msg = exact;
      }
      if (!msg || (options.before !== undefined && msg.seq >= options.before)) break;
      seq = msg.seq;
      if (options.matches && !options.matches(msg)) continue;
      remove(msg.seq);
      erased++;
      if (inFlight.size >= DELETES_IN_FLIGHT) await Promise.race(inFlight);
      if (erased % ERASE_PROGRESS_EVERY === 0) progress.log.info(`${progress.label}: ${erased} messages erased so far`);
    }
  } catch (error) {
    if (!isStreamNotFound(error)) failure ??= error;
  }
  await Promise.all(inFlight);
  if (failure) throw failure;
  return erased;
}

/** The message at `seq` itself, or null when it is deleted. */
async function messageAt(jsm: JetStreamManager, stream: string, seq: number): Promise<StoredMsg | null> {
  try {
    return await jsm.streams.getMessage(stream, { seq });
  } catch (error) {
    if (/no message found/i.test(String(error))) return null;
    throw error;
  }
}

/** Whether a NATS subject matches a filter with `*` (one token) and `>` (the rest) wildcards. */
export function subjectMatches(filter: string, subject: string): boolean {
  const wanted = filter.split(".");
  const tokens = subject.split(".");
  for (let i = 0; i < wanted.length; i++) {
    if (wanted[i] === ">") return tokens.length > i;
    if (i >= tokens.length || (wanted[i] !== "*" && wanted[i] !== tokens[i])) return false;
  }
  return wanted.length === tokens.length;
}

/** The stream's last sequence now. */
async function lastSequence(jsm: JetStreamManager, stream: string): Promise<number> {
  return (await jsm.streams.info(stream)).state.last_seq;
}

/**
 * The stream's first message on a subject matching `filter` at or after `seq`
 * (null when there is none). nats-server 2.9 serves `next_by_subj` on
 * `STREAM.MSG.GET`; the client's types only know it for direct gets.
 */
export function nextMessage(
  jsm: JetStreamManager,
  stream: string,
  filter: string,
  seq: number,
): Promise<StoredMsg | null> {
  return jsm.streams.getMessage(stream, { seq, next_by_subj: filter } as unknown as MsgRequest);
}
