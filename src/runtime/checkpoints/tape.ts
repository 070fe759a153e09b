/**
 * Folding a session's tape from a checkpoint or from the start, and making
 * the checkpoint a runner stores every `checkpointEvery` turns (docs/tape.md).
 */
import type { TapeCheckpointStore } from "../sessionStore.ts";
import { FOLDED_KINDS, foldTape, type TapeStep } from "./fold.ts";
import { emptyTape, type TapeState } from "./state.ts";
import { readLogSteps, readTurns, type TapeClients } from "./tapeReader.ts";

/**
 * `from`, with the session's tape after its cut folded on. Through turn
 * `throughTurn` when given (a checkpoint, a fork point): the ledger events
 * stored up to that turn's end (its TURN_COMPLETED), and the schedule events
 * stored by then. Without it: everything stored so far, through `lastTurnId`.
 */
export async function foldSessionTape(
  clients: TapeClients,
  from: TapeState,
  through: { turn: number; bounded: boolean },
): Promise<TapeState> {
  const sessionId = from.session_id;
  if (through.bounded && through.turn <= from.cut.through_turn_id) return from;
  const turns: TapeStep[] = [];
  let end: { seq: number; time: number } | null = null;
  const range = { afterSeq: from.cut.turns_seq, first: from.cut.through_turn_id + 1, last: through.turn };
  for (const turn of await readTurns(clients, sessionId, range, FOLDED_KINDS)) {
    turns.push({ kind: "turn", turn_id: turn.turn_id, events: turn.events });
    if (turn.end.seq > 0) end = turn.end;
  }
  // A bounded fold whose turns stored nothing takes no ledger or schedule event beyond its cut.
  const bound = through.bounded ? { events_seq: end?.seq ?? from.cut.events_seq, schedules_time: end?.time ?? 0 } : {};
  const others = await readLogSteps(clients, sessionId, from.cut, bound);
  const state = foldTape(from, [...turns, ...others]);
  const turnsSeq = Math.max(state.cut.turns_seq, end?.seq ?? 0);
  return {
    ...state,
    cut: { ...state.cut, through_turn_id: Math.max(state.cut.through_turn_id, through.turn), turns_seq: turnsSeq },
  };
}

/** Where a tape replay starts. */
export type TapeReplayFrom = "start" | "checkpoint";

/** A replay's result: the folded state, and where it started. */
export interface TapeReplay {
  /** The turn the replay started after: a checkpoint's, or 0. */
  from_turn_id: number;
  state: TapeState;
}

/**
 * Every domain of the session folded from its log: from the latest
 * checkpoint that holds the domains (or the start, when asked or when there
 * is none), through everything stored so far.
 */
export async function replayTape(
  clients: TapeClients,
  sessions: TapeCheckpointStore,
  sessionId: string,
  from: TapeReplayFrom = "checkpoint",
): Promise<TapeReplay> {
  const [checkpoint, lastTurnId] = await Promise.all([
    from === "checkpoint" ? sessions.checkpoint(sessionId) : null,
    sessions.lastTurnId(sessionId),
  ]);
  const base = checkpoint?.domains ?? emptyTape(sessionId);
  const state = await foldSessionTape(clients, base, { turn: lastTurnId, bounded: false });
  return { from_turn_id: base.cut.through_turn_id, state };
}

/**
 * The session's tape state through turn `throughTurn`, as a checkpoint
 * holds it: the latest checkpoint's (when it is not past that turn) with the
 * turns since folded on, else folded from the start.
 */
export async function tapeAtTurn(
  clients: TapeClients,
  sessions: Pick<TapeCheckpointStore, "checkpoint">,
  sessionId: string,
  throughTurn: number,
): Promise<TapeState> {
  const checkpoint = await sessions.checkpoint(sessionId);
  const usable = checkpoint?.domains && checkpoint.domains.cut.through_turn_id <= throughTurn;
  const base = usable && checkpoint.domains ? checkpoint.domains : emptyTape(sessionId);
  return foldSessionTape(clients, base, { turn: throughTurn, bounded: true });
}
