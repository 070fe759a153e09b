import { connectBus } from "../../bus/connection.ts";
import { connect } from "../../client/client.ts";
import { CONNECTION_FLAGS, CONNECTION_HELP, connectionFrom, parse, sessionArg, UsageError } from "../args.ts";
import { EXIT, EXIT_HELP } from "../failures.ts";
import { printable } from "../printable.ts";

export const help = `conclave cancel: stop a turn, wherever it runs

Usage: conclave cancel --session <id> <turn> [--reason TEXT] [--json]

A turn pending or running ends with outcome Cancelled (its TURN_COMPLETED says
so, and its agents' calls stop); one that already ended is left as it was.
Either way this prints one line and exits 0; a turn the session does not have
exits 2, no runner answering exits 3.

${CONNECTION_HELP}

${EXIT_HELP}`;

export async function run(argv: string[]): Promise<number> {
  const { values, positionals } = parse(
    argv,
    {
      ...CONNECTION_FLAGS,
      session: { type: "string", short: "s" },
      reason: { type: "string" },
      json: { type: "boolean" },
    },
    true,
  );
  if (values.help) {
    console.log(help);
    return 0;
  }
  const session = sessionArg(values.session);
  const turnId = Number(positionals[0]);
  if (positionals.length !== 1 || !Number.isInteger(turnId) || turnId < 1)
    throw new UsageError("give the turn to cancel, a number from 1, e.g. conclave cancel --session demo 3");
  const nc = await connectBus(connectionFrom(values, "client", false));
  const client = await connect({ nc });
  try {
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
  } finally {
    await nc.close();
  }
}
