import { connect } from "../../client/client.ts";
import { printable } from "../../client/printable.ts";
import { sessionArg, turnArg, UsageError } from "../args.ts";
import { defineCommand } from "../command.ts";
import { EXIT } from "../failures.ts";

const help = `conclave cancel: stop a turn, wherever it runs

Usage: conclave cancel --session <id> (--turn <n> | <n>) [--reason TEXT] [--json]

A turn pending or running ends with outcome Cancelled (its TURN_COMPLETED says
so, and its agents' calls stop); so does one suspended, waiting at a human
node or for an approval (a later resume, approve or deny is refused). One that
already ended is left as it was, so a second cancel changes nothing. Either
way this prints one line and exits 0; a turn the session does not have exits
2, no runner answering exits 3.`;

const EXAMPLE = "conclave cancel --session demo --turn 3";

export default defineCommand({
  help,
  flags: {
    session: { type: "string", short: "s" },
    turn: { type: "string", short: "t" },
    reason: { type: "string" },
    json: { type: "boolean" },
  },
  positionals: true,
  role: "client",
  async run({ values, positionals, bus }) {
    const session = sessionArg(values.session);
    if (values.turn !== undefined && positionals.length > 0)
      throw new UsageError(`give the turn once, with --turn or as an argument, e.g. ${EXAMPLE}`);
    const turnId = turnArg(values.turn !== undefined ? [values.turn] : positionals, EXAMPLE);
    const client = await connect({ nc: await bus() });
    const result = await client.cancel(session, turnId, values.reason);
    if (values.json) console.log(JSON.stringify(result));
    else if (result.status === "cancelling") console.log(`turn ${session}/${turnId}: cancelling`);
    else
      console.log(
        printable(`turn ${session}/${turnId} had already ended${result.outcome ? ` (${result.outcome})` : ""}`, {
          newlines: false,
        }),
      );
    return EXIT.ok;
  },
});
