import { connect } from "../../client/client.ts";
import { sessionArg, UsageError } from "../args.ts";
import { defineCommand } from "../command.ts";
import { EXIT } from "../failures.ts";
import { printable } from "../printable.ts";

const help = `conclave cancel: stop a turn, wherever it runs

Usage: conclave cancel --session <id> <turn> [--reason TEXT] [--json]

A turn pending or running ends with outcome Cancelled (its TURN_COMPLETED says
so, and its agents' calls stop); one that already ended is left as it was.
Either way this prints one line and exits 0; a turn the session does not have
exits 2, no runner answering exits 3.`;

export default defineCommand({
  help,
  flags: { session: { type: "string", short: "s" }, reason: { type: "string" }, json: { type: "boolean" } },
  positionals: true,
  role: "client",
  async run({ values, positionals, bus }) {
    const session = sessionArg(values.session);
    const turnId = Number(positionals[0]);
    if (positionals.length !== 1 || !Number.isInteger(turnId) || turnId < 1)
      throw new UsageError("give the turn to cancel, a number from 1, e.g. conclave cancel --session demo 3");
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
