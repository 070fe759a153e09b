import { connectBus } from "../../bus/connection.ts";
import { connect } from "../../client/client.ts";
import { CONNECTION_FLAGS, CONNECTION_HELP, connectionFrom, parse, sessionArg, turnArg } from "../args.ts";
import { EXIT, EXIT_HELP } from "../failures.ts";
import { printable } from "../printable.ts";

export const help = `conclave rollback: undo a finished turn's executed write tool calls, last first

Usage: conclave rollback TURN --session ID [--json]

  TURN           the turn's number
  --session ID   its session
  --json         the reply as one JSON object

Each live write call the turn made (not a dry run) is undone through its
tool's rollback, in reverse order, and the turn's log records it
(TOOL_CALL_ROLLED_BACK). A call rolled back already is skipped. Exit 0 when every
call was undone (or there was none), 1 when one could not be; 2 when the turn
is still running or waiting (conflict) or does not exist (not_found).

${CONNECTION_HELP}

${EXIT_HELP}`;

export async function run(argv: string[]): Promise<number> {
  const { values, positionals } = parse(
    argv,
    { ...CONNECTION_FLAGS, session: { type: "string", short: "s" }, json: { type: "boolean" } },
    true,
  );
  if (values.help) {
    console.log(help);
    return 0;
  }
  const session = sessionArg(values.session);
  const turnId = turnArg(positionals, "conclave rollback 3 --session demo");
  const nc = await connectBus(connectionFrom(values, "client", false));
  try {
    const client = await connect({ nc });
    const reply = await client.rollback(session, turnId);
    if (values.json) console.log(JSON.stringify(reply));
    else if (reply.calls.length === 0) console.log(`turn ${turnId} has no write call left to roll back`);
    else
      for (const call of reply.calls)
        console.log(
          printable(
            `${call.ok ? "rolled back" : "NOT rolled back"}  ${call.call_id}  ${call.tool}${call.error ? `: ${call.error}` : ""}`,
            { newlines: false },
          ),
        );
    return reply.calls.every((call) => call.ok) ? 0 : EXIT.turnFailed;
  } finally {
    await nc.close();
  }
}
