/**
 * A session's compaction summary between its snapshot and its log. The
 * summary holds the user's words (the first sentence of each side of each
 * turn it folded in), and a snapshot is a KV key rewritten after every turn,
 * whose superseded revisions stay in JetStream's files after an erase; the
 * event log is erased whole. So the stored snapshot (and a checkpoint) keeps
 * a reference to the summary, the turn whose log holds its text
 * (`compacted_in`), and the runner reads the text back from that turn's
 * CONTEXT_COMPACTED, or a fork's SESSION_FORKED, when it loads the session.
 * A live session keeps it in memory, so only a load reads the log.
 */
import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import type { ArenaSummary } from "../contracts/context.ts";
import type { EngineEvent } from "../contracts/events.ts";
import { readEvents } from "../eventlog/reader.ts";
import type { SessionSnapshot } from "./checkpoints/sessionSnapshot.ts";

/** The snapshot as stored: the summary's text left out where its `compacted_in` names the turn holding it. */
export function storedSnapshot<S extends SessionSnapshot>(snapshot: S): S {
  const summary = snapshot.context_arena?.summary;
  if (!summary || summary.compacted_in === undefined || summary.text === undefined) return snapshot;
  const { text: _text, ...reference } = summary;
  return { ...snapshot, context_arena: { ...snapshot.context_arena!, summary: reference } };
}

/** The summary's text in a turn's events: its CONTEXT_COMPACTED's, or the state a fork's SESSION_FORKED carries. */
export function summaryTextIn(events: readonly EngineEvent[], summary: ArenaSummary): string | undefined {
  for (const event of events) {
    if (event.kind === "CONTEXT_COMPACTED" && event.payload.through_turn === summary.through_turn)
      return event.payload.summary;
    if (event.kind === "SESSION_FORKED") {
      const session = event.payload.state.session as SessionSnapshot | undefined;
      const forked = session?.context_arena?.summary;
      if (forked?.through_turn === summary.through_turn && typeof forked.text === "string") return forked.text;
    }
  }
  return undefined;
}

/**
 * The snapshot with its summary's text read back from the session's log (the turn `compacted_in`
 * names). A text no longer on the log (the turn trimmed, or the read failed) leaves the summary
 * without it: the turns it covered stay covered, and the next compaction starts its text afresh.
 */
export async function withSummaryText<S extends SessionSnapshot>(
  clients: { js: JetStreamClient; jsm: JetStreamManager },
  sessionId: string,
  snapshot: S,
): Promise<S> {
  const summary = snapshot.context_arena?.summary;
  if (!summary || summary.text !== undefined || summary.compacted_in === undefined) return snapshot;
  const events = await readEvents(clients.js, clients.jsm, sessionId, summary.compacted_in).catch(() => []);
  const text = summaryTextIn(events, summary);
  if (text === undefined) return snapshot;
  return { ...snapshot, context_arena: { ...snapshot.context_arena!, summary: { ...summary, text } } };
}
