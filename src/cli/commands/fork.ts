import { connect } from "../../client/client.ts";
import { printable } from "../../client/printable.ts";
import type { ForkPoint } from "../../contracts/fork.ts";
import { SessionId } from "../../contracts/ids.ts";
import { sessionArg, UsageError } from "../args.ts";
import { defineCommand } from "../command.ts";
import { EXIT } from "../failures.ts";

const help = `conclave fork: start a new session from another's state at a turn

Usage: conclave fork --session S --at <TURN|seq:N> --as S2 [--json]

  --session S   the session to fork (it is only read, never changed)
  --at TURN     fork after this turn (it must have completed)
  --at seq:N    fork after the last turn completed by position N of the log
  --as S2       the new session's id (one never used)
  --json        print the fork record as JSON

The new session starts as S stood after the fork turn, across every domain
(docs/tape.md, "Fork"): its session state (mood, stance, context summary),
its truth and task ledgers, its memory (what was learned up to that turn: a
fact learned later is not there), and its cost so far in its replay state.
Its first event, SESSION_FORKED, says where it came from; its next turn
follows the fork turn. Schedules are not copied. Exits 2 when S2 exists.`;

/** `--at`: a turn number, or `seq:N`. */
function forkPoint(value: string | undefined): ForkPoint {
  if (value === undefined) throw new UsageError("give the fork point, e.g. --at 3 or --at seq:120");
  const seq = /^seq:(\d+)$/.exec(value);
  const number = Number(seq ? seq[1] : value);
  if (!Number.isSafeInteger(number) || number < 1 || (!seq && !/^\d+$/.test(value)))
    throw new UsageError(`bad --at ${JSON.stringify(value)}: a turn number (3) or a log position (seq:120)`);
  return seq ? { seq: number } : { turn: number };
}

export default defineCommand({
  help,
  flags: {
    session: { type: "string", short: "s" },
    at: { type: "string" },
    as: { type: "string" },
    json: { type: "boolean" },
  },
  role: "client",
  async run({ values, bus }) {
    const session = sessionArg(values.session);
    const at = forkPoint(values.at);
    if (!values.as || !SessionId.safeParse(values.as).success)
      throw new UsageError(`bad --as ${JSON.stringify(values.as ?? "")}: 1-64 characters of A-Z, a-z, 0-9, '_' or '-'`);
    const client = await connect({ nc: await bus() });
    const record = await client.fork({ session, at, as: values.as });
    if (values.json) {
      console.log(JSON.stringify(record));
      return EXIT.ok;
    }
    const copied = Object.entries(record.copied)
      .map(([store, count]) => `${store} ${count}`)
      .join(", ");
    console.log(
      printable(
        `session ${record.from_session} forked after turn ${record.at_turn} as ${record.session_id} (next turn ${record.next_turn_id}; copied: ${copied})`,
        { newlines: false },
      ),
    );
    return EXIT.ok;
  },
});
