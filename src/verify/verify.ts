/**
 * `verify(sessionId, level)`: runs the declared checks over a session and
 * reports each with its evidence. `quick` checks the event log's contiguity;
 * `full` adds the recipe output schemas, the ledgers' fold (the ledger
 * replay) and the session state's replay (what `conclave replay` checks).
 * The two replays are given by the caller, as what it may read allows.
 */
import type { LedgerReplay } from "../contracts/ledger.ts";
import { checkContiguity, checkRecipeOutputs, type VerifyCheck } from "./checks.ts";
import type { LoggedMessage } from "./logReader.ts";

/** How much `verify` checks: `quick` (the log's contiguity) or `full` (every check). */
export type VerifyLevel = "quick" | "full";
export const VERIFY_LEVELS: readonly VerifyLevel[] = ["quick", "full"];

/** What `verify` reports. */
export interface VerifyReport {
  session_id: string;
  level: VerifyLevel;
  /** Every check that ran holds (skipped ones count as holding). */
  ok: boolean;
  checks: VerifyCheck[];
}

/** Where the checks read from; a replay left out is reported as skipped, with `skipReason`. */
export interface VerifySources {
  /** Every stored message of the session's turns, in log order. */
  messages(): Promise<LoggedMessage[]>;
  /** The session state replayed from the log and compared with the stored one (needs the runner's store). */
  replayState?: () => Promise<StateReplay>;
  /** The ledgers folded again from their events and compared with the stored projection. */
  replayLedgers?: () => Promise<LedgerReplay>;
  /** Why a replay the caller cannot run is left out (e.g. "needs the runner role: run `conclave verify`"). */
  skipReason?: string;
}

/**
 * What the state check reads of a session's replay (src/runtime/replay.ts's
 * ReplayResult has it, and more): declared here, so verify needs nothing of the runtime.
 */
export interface StateReplay {
  /** Where the fold started: a checkpoint's turn, or 0 for the beginning. */
  from_turn_id: number;
  turns_replayed: number;
  rebuilt: { turns_completed: number; last_turn_id: number };
  matches: boolean;
  /** Fields that differ, `field: rebuilt ≠ stored`. */
  differences: string[];
  /** The turn events the fold read. */
  events_read?: number;
  /** Why a replay asked to start from the checkpoint started from the first turn. */
  note?: string;
}

function replayStateCheck(result: StateReplay): VerifyCheck {
  const range =
    result.turns_replayed > 0
      ? `turns ${result.from_turn_id + 1}..${result.from_turn_id + result.turns_replayed}`
      : "no turn";
  return {
    name: "replay_state",
    ok: result.matches,
    evidence: [
      `replayed ${range}${result.from_turn_id > 0 ? ` from the checkpoint after turn ${result.from_turn_id}` : ""}${result.events_read !== undefined ? ` (${result.events_read} events read)` : ""}: ${result.rebuilt.turns_completed} turns completed, last turn ${result.rebuilt.last_turn_id}`,
      ...(result.note ? [`note: ${result.note}`] : []),
      result.matches ? "matches the stored state" : "differs from the stored state:",
      ...result.differences,
    ],
  };
}

function ledgersCheck(result: LedgerReplay): VerifyCheck {
  const { rebuilt } = result;
  return {
    name: "ledgers",
    ok: result.matches,
    evidence: [
      `folded: ${rebuilt.truth.facts.length} facts, ${rebuilt.task.items.length} task items, ${rebuilt.task.blockers.length} blockers`,
      result.matches ? "match the stored projection" : "differ from the stored projection:",
      ...result.differences,
    ],
  };
}

const skipped = (name: string, reason: string): VerifyCheck => ({ name, ok: true, skipped: true, evidence: [reason] });

/** Runs the checks of `level` over the session; a check that throws is reported failed with the error as evidence. */
export async function verifySession(
  sessionId: string,
  level: VerifyLevel,
  sources: VerifySources,
): Promise<VerifyReport> {
  const guarded = async (name: string, run: () => Promise<VerifyCheck>): Promise<VerifyCheck> => {
    try {
      return await run();
    } catch (error) {
      return { name, ok: false, evidence: [`could not run: ${(error as Error).message.split("\n")[0]}`] };
    }
  };
  const messages = await sources.messages();
  const checks: VerifyCheck[] = [checkContiguity(messages)];
  if (level === "full") {
    const reason = sources.skipReason ?? "not available to this caller";
    checks.push(checkRecipeOutputs(messages));
    const { replayState, replayLedgers } = sources;
    checks.push(
      ...(await Promise.all([
        replayLedgers
          ? guarded("ledgers", async () => ledgersCheck(await replayLedgers()))
          : Promise.resolve(skipped("ledgers", reason)),
        replayState
          ? guarded("replay_state", async () => replayStateCheck(await replayState()))
          : Promise.resolve(skipped("replay_state", reason)),
      ])),
    );
  }
  return { session_id: sessionId, level, ok: checks.every((check) => check.ok), checks };
}

/** The report as lines of text: one per check (✔, ✗ or – skipped), its evidence indented below. */
export function describeVerify(report: VerifyReport): string[] {
  const lines = [`session ${report.session_id}: ${report.level} verification ${report.ok ? "passed" : "FAILED"}`];
  for (const check of report.checks) {
    lines.push(`${check.skipped ? "–" : check.ok ? "✔" : "✗"} ${check.name}${check.skipped ? " (skipped)" : ""}`);
    for (const line of check.evidence) lines.push(`    ${line}`);
  }
  return lines;
}
