import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { printable } from "../../client/printable.ts";
import { LedgerStore } from "../../ledgers/ledgerStore.ts";
import { replayLedgers, replaySession } from "../../runtime/replay.ts";
import { SessionStore } from "../../runtime/sessionStore.ts";
import { sessionArg } from "../args.ts";
import { defineCommand } from "../command.ts";

const help = `conclave replay: rebuild a session's state from its event log and check it

Usage: conclave replay --session <id> [--from-start] [--json]

Starts from the session's latest checkpoint (saved every 10 turns), folds the
events of every later turn (the final attempt of each), and compares the result
with the state the runner stored. Then folds the session's truth and task
ledgers again, from the checkpoint's ledgers plus the ledger events after it,
and compares them with the stored projection. With no checkpoint, or one that
cannot be read, both fold from the start and a note says so; --from-start
always does. Turns or ledger events that retention removed from the log (see
docs/operations.md, "Data lifecycle") are named in a note, and what they were
folded into is not compared. Exit status 0 when both match, 1 when not.`;

export default defineCommand({
  help,
  flags: { session: { type: "string", short: "s" }, "from-start": { type: "boolean" }, json: { type: "boolean" } },
  role: "runner",
  async run({ values, bus }) {
    const session = sessionArg(values.session);
    const from = values["from-start"] ? "start" : "checkpoint";
    const nc = await bus();
    const sessions = await SessionStore.open(nc);
    const [result, ledgers] = await Promise.all([
      replaySession(jetstream(nc), await jetstreamManager(nc), sessions, session, { from }),
      LedgerStore.open(nc).then((store) => replayLedgers(store, sessions, session, { from })),
    ]);
    if (values.json) console.log(JSON.stringify({ ...result, ledgers }));
    else {
      console.log(
        `session ${session}: replayed turns ${result.from_turn_id + 1}..${result.from_turn_id + result.turns_replayed}${result.from_turn_id > 0 ? ` (from the checkpoint after turn ${result.from_turn_id})` : " (from the start)"}, ${result.events_read} events read`,
      );
      if (result.note) console.log(`note: ${result.note}`);
      console.log(
        `rebuilt: ${result.rebuilt.turns_completed} turns completed, last turn ${result.rebuilt.last_turn_id}`,
      );
      if (result.missing_turns.length > 0)
        console.log(
          `note: turns ${compactTurns(result.missing_turns)} are no longer on the log (trimmed, or past its maximum age): the stored state is not compared`,
        );
      console.log(
        result.matches
          ? "✔ matches the stored state"
          : `✗ differs from the stored state:\n  ${result.differences.map((line) => printable(line, { newlines: false })).join("\n  ")}`,
      );
      const { rebuilt } = ledgers;
      console.log(
        `ledgers: ${rebuilt.events} events folded (${ledgers.events_read ?? rebuilt.events} read after stream position ${ledgers.from_seq ?? 0}): ${rebuilt.truth.facts.length} facts, ${rebuilt.task.items.length} task items, ${rebuilt.task.blockers.length} blockers`,
      );
      if (ledgers.expired_events)
        console.log(
          `note: ${ledgers.expired_events} ledger event(s) folded into the stored projection are no longer on the log (past its maximum age): the projection is not compared`,
        );
      console.log(
        ledgers.matches
          ? "✔ ledgers match the stored projection"
          : `✗ ledgers differ from the stored projection:\n  ${ledgers.differences.map((line) => printable(line, { newlines: false })).join("\n  ")}`,
      );
    }
    return result.matches && ledgers.matches ? 0 : 1;
  },
});

/** Turn ids as ranges: `1..3, 7`. */
function compactTurns(turns: readonly number[]): string {
  const ranges: string[] = [];
  for (let i = 0; i < turns.length; ) {
    let j = i;
    while (j + 1 < turns.length && turns[j + 1] === (turns[j] as number) + 1) j++;
    ranges.push(j > i ? `${turns[i]}..${turns[j]}` : `${turns[i]}`);
    i = j + 1;
  }
  return ranges.join(", ");
}
