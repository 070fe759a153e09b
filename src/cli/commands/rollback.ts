import { connect } from "../../client/client.ts";
import { printable } from "../../client/printable.ts";
import { sessionArg, turnArg } from "../args.ts";
import { defineCommand } from "../command.ts";
import { EXIT } from "../failures.ts";

const help = `conclave rollback: undo a finished turn's executed write tool calls, last first

Usage: conclave rollback TURN --session ID [--json]

  TURN           the turn's number
  --session ID   its session
  --json         the reply as one JSON object

Each live write call the turn made (not a dry run) is undone through its
tool's rollback, in reverse order, and the turn's log records it
(TOOL_CALL_ROLLED_BACK). A call rolled back already is skipped. Exit 0 when every
call was undone (or there was none), 1 when one could not be; 2 when the turn
is still running or waiting (conflict) or does not exist (not_found).`;

export default defineCommand({
  help,
  flags: { session: { type: "string", short: "s" }, json: { type: "boolean" } },
  positionals: true,
  role: "client",
  async run({ values, positionals, bus }) {
    const session = sessionArg(values.session);
    const turnId = turnArg(positionals, "conclave rollback 3 --session demo");
    const client = await connect({ nc: await bus() });
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
  },
});
