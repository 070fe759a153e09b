import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import { modulatorsFromSensors } from "../cognition/workspace.ts";
import { observeUsage } from "../context/arena.ts";
import { emptyArenaState } from "../contracts/context.ts";
import type { EngineEvent } from "../contracts/events.ts";
import type { LedgerReplay } from "../contracts/ledger.ts";
import { neutralModulators, neutralStance } from "../contracts/workspace.ts";
import { readEvents } from "../eventlog/reader.ts";
import type { LedgerStore } from "../ledgers/ledgerStore.ts";
import type { Checkpoint, SessionSnapshot, SessionStore } from "./sessionStore.ts";

export const emptySnapshot = (): SessionSnapshot => ({
  turns_completed: 0,
  last_turn_id: 0,
  modulators: neutralModulators(),
  stance: neutralStance(),
});

/**
 * Folds one turn's events into the session state, as the session actor
 * changed it: the modulators follow the fast sensors, the stance is the last
 * one a wave recorded. Only the turn's final attempt counts (after its last
 * TURN_RESUMED that ran it again from ingest: one `from: "last_step"` goes on
 * after the recorded steps, which count), and only a completed turn changes anything.
 */
export function foldTurn(state: SessionSnapshot, events: readonly EngineEvent[]): SessionSnapshot {
  const resumedAt = events.findLastIndex(
    (event) => event.kind === "TURN_RESUMED" && event.payload.from !== "last_step",
  );
  const attempt = events.slice(resumedAt + 1);
  if (!attempt.some((event) => event.kind === "TURN_COMPLETED")) return state;
  let { modulators, stance, context_arena: arena } = state;
  for (const event of attempt) {
    if (event.kind === "SENSORS_FAST_UPDATED") modulators = modulatorsFromSensors(event.payload.sensors, modulators);
    if (event.kind === "STANCE_UPDATED") stance = event.payload.current;
    // The context arena, as the turn changed it (machines/turn/contextArena.ts, agents.ts).
    if (event.kind === "CONTEXT_PLANNED") {
      // The zones' adaptation after the turn is recorded with its plan (absent: none).
      const { zones: _zones, ...rest } = arena ?? emptyArenaState();
      const { adaptation, supplemental } = event.payload;
      // The supplements it consumed: the last one cited is the arena's (supplemental injection).
      const consumed = supplemental?.at(-1)?.seq;
      arena = {
        ...rest,
        observed_tokens: 0,
        ...(adaptation ? { zones: adaptation } : {}),
        ...(consumed !== undefined ? { supplement_seq: consumed } : {}),
      };
    }
    if (event.kind === "CONTEXT_COMPACTED")
      arena = {
        ...arena,
        // The text, and where the log holds it: the stored snapshot keeps only the reference (sessionSummary.ts).
        summary: { through_turn: event.payload.through_turn, text: event.payload.summary, compacted_in: event.turn_id },
        observed_tokens: 0,
        compactions: (arena?.compactions ?? 0) + 1,
        // The compaction request it consumed (or the one consumed before it).
        ...((event.payload.request_seq ?? arena?.compaction_request_seq)
          ? { compaction_request_seq: event.payload.request_seq ?? arena?.compaction_request_seq }
          : {}),
      };
    if (event.kind === "AGENT_COMPLETED" && arena) arena = observeUsage(arena, event.payload.usage);
  }
  return {
    turns_completed: state.turns_completed + 1,
    last_turn_id: Math.max(state.last_turn_id, attempt[0]?.turn_id ?? 0),
    modulators,
    stance,
    ...(arena ? { context_arena: arena } : {}),
  };
}

export interface ReplayResult {
  /** Where the fold started: a checkpoint's turn, or 0 for the beginning. */
  from_turn_id: number;
  turns_replayed: number;
  rebuilt: SessionSnapshot;
  stored: SessionSnapshot | null;
  matches: boolean;
  /** Fields that differ, `field: rebuilt ≠ stored`. */
  differences: string[];
  /**
   * Turns with no events left on the log (trimmed by `turnsPerSession`, past the log's maximum age,
   * or never stored): the stored state may have folded them, so a difference is not one, and `matches` is true.
   */
  missing_turns: number[];
  /** The turn events the fold read from the log (the delta after the checkpoint, or every turn). */
  events_read: number;
  /** Why a fold asked to start from the checkpoint started from the first turn (none, or unreadable). */
  note?: string;
}

/** Where a replay starts: the session's latest checkpoint (the default), or its first event. */
export type ReplayFrom = "checkpoint" | "start";

/** The checkpoint a replay starts from: none when asked for the start, or when there is none or it cannot be read (`note` says which). */
export async function replayCheckpoint(
  sessions: Pick<SessionStore, "checkpoint">,
  sessionId: string,
  from: ReplayFrom,
): Promise<{ checkpoint: Checkpoint | null; note?: string }> {
  if (from === "start") return { checkpoint: null };
  try {
    const checkpoint = await sessions.checkpoint(sessionId);
    return checkpoint ? { checkpoint } : { checkpoint: null, note: "no checkpoint yet: folded from the start" };
  } catch (error) {
    const reason = (error as Error).message.split("\n")[0];
    return { checkpoint: null, note: `the checkpoint could not be read (${reason}): folded from the start` };
  }
}

const close = (a: number, b: number) => Math.abs(a - b) < 1e-9;

export function compareSnapshots(rebuilt: SessionSnapshot, stored: SessionSnapshot): string[] {
  const differences: string[] = [];
  for (const field of ["turns_completed", "last_turn_id"] as const) {
    if (rebuilt[field] !== stored[field]) differences.push(`${field}: ${rebuilt[field]} ≠ ${stored[field]}`);
  }
  for (const group of ["modulators", "stance"] as const) {
    for (const [name, value] of Object.entries(rebuilt[group])) {
      const other = (stored[group] as Record<string, number>)[name] ?? Number.NaN;
      if (!close(value, other)) differences.push(`${group}.${name}: ${value} ≠ ${other}`);
    }
  }
  const zones = (snapshot: SessionSnapshot) => JSON.stringify(snapshot.context_arena?.zones ?? null);
  if (zones(rebuilt) !== zones(stored)) differences.push(`context_arena.zones: ${zones(rebuilt)} ≠ ${zones(stored)}`);
  return differences;
}

/**
 * Rebuilds a session's state from its event log, starting at the latest
 * checkpoint (only the turns after it are read) or, with `from: "start"`, at
 * the first turn, and compares it with the stored snapshot. With no
 * checkpoint, or one that cannot be read, it folds from the first turn and `note` says so.
 */
export async function replaySession(
  js: JetStreamClient,
  jsm: JetStreamManager,
  sessions: SessionStore,
  sessionId: string,
  options: { from?: ReplayFrom } = {},
): Promise<ReplayResult> {
  const [{ checkpoint, note }, stored, lastTurnId] = await Promise.all([
    replayCheckpoint(sessions, sessionId, options.from ?? "checkpoint"),
    sessions.snapshot(sessionId),
    sessions.lastTurnId(sessionId),
  ]);
  let state = checkpoint?.snapshot ?? emptySnapshot();
  const from = checkpoint?.through_turn_id ?? 0;
  const missing: number[] = [];
  let read = 0;
  for (let turnId = from + 1; turnId <= lastTurnId; turnId++) {
    const events = await readEvents(js, jsm, sessionId, turnId);
    read += events.length;
    if (events.length === 0) missing.push(turnId);
    state = foldTurn(state, events);
  }
  const compared = stored ? compareSnapshots(state, stored) : ["no stored snapshot"];
  // Retention removed turns the stored state folded: what is left cannot match it, and is not held to.
  const differences = missing.length > 0 ? [] : compared;
  return {
    from_turn_id: from,
    turns_replayed: lastTurnId - from,
    rebuilt: state,
    stored,
    matches: differences.length === 0,
    differences,
    missing_turns: missing,
    events_read: read,
    ...(note ? { note } : {}),
  };
}

/**
 * The session's ledgers folded again and compared with their projection
 * ({@link LedgerStore.replay}): from the latest checkpoint's ledgers plus the
 * events after them, or from the first event (`from: "start"`, or no usable checkpoint).
 */
export async function replayLedgers(
  ledgers: Pick<LedgerStore, "replay">,
  sessions: Pick<SessionStore, "checkpoint">,
  sessionId: string,
  options: { from?: ReplayFrom } = {},
): Promise<LedgerReplay> {
  const { checkpoint } = await replayCheckpoint(sessions, sessionId, options.from ?? "checkpoint");
  return ledgers.replay(sessionId, checkpoint?.domains?.ledgers ?? null);
}
