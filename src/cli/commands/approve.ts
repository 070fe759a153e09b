import { connect } from "../../client/client.ts";
import { UsageError } from "../args.ts";
import { type Command, defineCommand } from "../command.ts";
import { printRunResult } from "../recipeResult.ts";
import { createRunPrinter } from "./run.ts";

/** `conclave approve` and `conclave deny`: one command, the answer differs. */
export function approvalCommand(verb: "approve" | "deny"): Command {
  const approved = verb === "approve";
  const help = `conclave ${verb}: ${verb} the tool call a recipe run waits for, and follow the run on

Usage: conclave ${verb} ID --user-id ID [--role ROLE] [--reason TEXT] [--json]

  ID              the approval: <session>/<turn> (see conclave approvals)
  --user-id ID    who answers (recorded on the run's log)
  --role ROLE     the role answering: must be the approval's (policy approver_role)  [operator]
  --reason TEXT   why (recorded with the answer)
  --json          one JSON event per line, then {"result": …}
  --timeout MS    patience until the run completes or suspends again  [120000]

${verb === "approve" ? "The call then runs" : "The call is refused (denied) and never runs"}; the run goes on from its node on any
runner. Exit 0 when the run then completed, 1 when it Failed or was Cancelled, 5 when
it suspended again; 2 when the answer is refused: nothing waits (conflict), the
role is not the approval's (forbidden), no such turn (not_found).`;
  return defineCommand({
    help,
    flags: {
      "user-id": { type: "string" },
      role: { type: "string" },
      reason: { type: "string" },
      json: { type: "boolean" },
      timeout: { type: "string" },
    },
    positionals: true,
    role: "client",
    async run({ values, positionals, bus }) {
      const id = positionals[0];
      if (!id || positionals.length > 1)
        throw new UsageError(`give one approval id: conclave ${verb} ops/3 --user-id ana`);
      const userId = values["user-id"];
      if (!userId) throw new UsageError("--user-id is required: who answers");
      const timeoutMs = Number(values.timeout ?? 120_000);
      if (!Number.isFinite(timeoutMs) || timeoutMs <= 0)
        throw new UsageError("--timeout must be a positive number of milliseconds");
      const client = await connect({ nc: await bus() });
      const options = {
        userId,
        ...(values.role ? { role: values.role } : {}),
        ...(values.reason ? { reason: values.reason } : {}),
        onEvent: createRunPrinter(values.json),
        timeoutMs,
      };
      const result = approved ? await client.approve(id, options) : await client.deny(id, options);
      return printRunResult(result, { json: values.json });
    },
  });
}

export default approvalCommand("approve");
