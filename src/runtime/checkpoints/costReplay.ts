/**
 * A session's cost from its latest replay checkpoint: the cost the checkpoint
 * folded (unpriced), priced, plus the turns stored after its cut, read in one
 * pass. It equals the fold of every turn from the start (`client.cost`); when
 * the checkpoint cannot give that, the turns are folded from the start and
 * `note` says why (docs/cost.md).
 */
import type { EngineEvent } from "../../contracts/events.ts";
import type { PriceTable } from "../../cost/prices.ts";
import { type CostSummary, priceSummary, type SummarizeOptions, summarizeCost } from "../../cost/summary.ts";
import { type ReplayFrom, replayCheckpoint } from "../replay.ts";
import type { TapeCheckpointStore } from "../sessionStore.ts";
import { addCost } from "./fold.ts";
import { emptyCost } from "./state.ts";
import { readTurns, type TapeClients } from "./tapeReader.ts";

/** The kinds summarizeCost reads: a read parses no other. */
const COST_KINDS: ReadonlySet<string> = new Set(["TURN_COMPLETED", "AGENT_COMPLETED"]);

/** What {@link replayCost} answers. */
export interface CostReplay {
  summary: CostSummary;
  /** The turn the fold of the log started after: the checkpoint's, or 0 (the start). */
  from_turn_id: number;
  /** The stored messages of the session's turns read from the log. */
  events_read: number;
  /** Why a fold asked to start from the checkpoint started from the first turn. */
  note?: string;
}

/** Options of {@link replayCost}. */
export interface CostReplayOptions extends SummarizeOptions {
  table: PriceTable;
  /** Default `checkpoint`. */
  from?: ReplayFrom;
}

/**
 * The session's cost, priced with `options.table`: from its latest checkpoint
 * plus the turns after it, or from its first turn (`from: "start"`, or no
 * usable checkpoint: none, unreadable, a fork's, or one whose rows the table
 * cannot price exactly).
 */
export async function replayCost(
  clients: TapeClients,
  sessions: TapeCheckpointStore,
  sessionId: string,
  options: CostReplayOptions,
): Promise<CostReplay> {
  const { table, from = "checkpoint", ...summarize } = options;
  const [found, lastTurnId] = await Promise.all([
    replayCheckpoint(sessions, sessionId, from),
    sessions.lastTurnId(sessionId),
  ]);
  const domains = found.checkpoint?.domains;
  let note = found.note;
  let base: { cost: CostSummary; through: number; afterSeq: number } | null = null;
  if (found.checkpoint && !domains) note = "the checkpoint holds no folded domains: folded from the start";
  else if (domains?.forked_at_turn !== undefined)
    note = "the checkpoint of a fork holds its source's cost: folded from the start";
  else if (domains) {
    const priced = priceSummary(domains.cost, table, summarize);
    if (priced) base = { cost: priced, through: domains.cut.through_turn_id, afterSeq: domains.cut.turns_seq };
    else note = "the price table prices the checkpoint's actors on different models: folded from the start";
  }
  const tally = { read: 0 };
  const range = { afterSeq: base?.afterSeq ?? 0, first: (base?.through ?? 0) + 1, last: lastTurnId };
  const events: EngineEvent[] = [];
  for (const turn of await readTurns(clients, sessionId, range, COST_KINDS, tally)) events.push(...turn.events);
  const delta = summarizeCost(sessionId, events, table, summarize);
  return {
    summary: addCost(base?.cost ?? emptyCost(sessionId), delta),
    from_turn_id: base?.through ?? 0,
    events_read: tally.read,
    ...(note ? { note } : {}),
  };
}
