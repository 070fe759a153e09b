import { connect } from "../../client/client.ts";
import { printable } from "../../client/printable.ts";
import { defineCommand } from "../command.ts";

const help = `conclave approvals: the tool calls waiting for a person's approval

Usage: conclave approvals [--session ID] [--json]

  --session ID   only this session's
  --json         one JSON object per line

Each line: the approval's id (<session>/<turn>, for conclave approve|deny), the
tool and its arguments (as the log keeps them: redacted), why it needs approval,
the role an answer needs, and since when it waits.`;

export default defineCommand({
  help,
  flags: { session: { type: "string", short: "s" }, json: { type: "boolean" } },
  role: "client",
  async run({ values, bus }) {
    const client = await connect({ nc: await bus() });
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
  },
});
