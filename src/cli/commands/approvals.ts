import { connectBus } from "../../bus/connection.ts";
import { connect } from "../../client/client.ts";
import { CONNECTION_FLAGS, CONNECTION_HELP, connectionFrom, parse } from "../args.ts";
import { EXIT_HELP } from "../failures.ts";
import { printable } from "../printable.ts";

export const help = `conclave approvals: the tool calls waiting for a person's approval

Usage: conclave approvals [--session ID] [--json]

  --session ID   only this session's
  --json         one JSON object per line

Each line: the approval's id (<session>/<turn>, for conclave approve|deny), the
tool and its arguments (as the log keeps them: redacted), why it needs approval,
the role an answer needs, and since when it waits.

${CONNECTION_HELP}

${EXIT_HELP}`;

export async function run(argv: string[]): Promise<number> {
  const { values } = parse(argv, {
    ...CONNECTION_FLAGS,
    session: { type: "string", short: "s" },
    json: { type: "boolean" },
  });
  if (values.help) {
    console.log(help);
    return 0;
  }
  const nc = await connectBus(connectionFrom(values, "client", false));
  try {
    const client = await connect({ nc });
    const pending = await client.approvals(values.session);
    for (const approval of pending) {
      if (values.json) console.log(JSON.stringify(approval));
      else
        console.log(
          printable(
            `${approval.id}  ${approval.tool}(${JSON.stringify(approval.args)})  ${approval.reason}  [role ${approval.requiredRole ?? "any"}; waiting since ${new Date(approval.since).toISOString()}]`,
            { newlines: false },
          ),
        );
    }
    if (!values.json && pending.length === 0) console.log("no tool call waits for approval");
    return 0;
  } finally {
    await nc.close();
  }
}
