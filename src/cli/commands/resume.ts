import { connect } from "../../client/client.ts";
import { sessionArg, turnArg, UsageError } from "../args.ts";
import { defineCommand } from "../command.ts";
import { printRunResult } from "../recipeResult.ts";
import { createRunPrinter } from "./run.ts";

const help = `conclave resume: answer a recipe run suspended at a human node, and follow it on

Usage: conclave resume TURN --session ID --user-id ID [--role ROLE] --input JSON [--json]

  TURN            the suspended run's turn number
  --session ID    its session
  --user-id ID    who answers (recorded in HUMAN_INPUT_RECEIVED)
  --role ROLE     the role answering: must be the node's required_role when it has one
  --input JSON    the answer, any JSON value: {"approved": true}, "yes", 3 …
  --json          one JSON event per line, then {"result": …}
  --timeout MS    patience until the run completes or suspends again  [120000]

Exit 0 when the run then completed, 1 when it Failed or was Cancelled, 5 when
it suspended again; 2 when the answer is refused: the run is not waiting
(conflict), the role is not the node's (forbidden), no such turn (not_found).`;

export default defineCommand({
  help,
  flags: {
    session: { type: "string", short: "s" },
    "user-id": { type: "string" },
    role: { type: "string" },
    input: { type: "string", short: "i" },
    json: { type: "boolean" },
    timeout: { type: "string" },
  },
  positionals: true,
  role: "client",
  async run({ values, positionals, bus }) {
    const session = sessionArg(values.session);
    const turnId = turnArg(positionals, "conclave resume 3 --session demo …");
    const userId = values["user-id"];
    if (!userId) throw new UsageError("--user-id is required: who answers");
    if (values.input === undefined) throw new UsageError("--input is required: the answer, as JSON");
    let input: unknown;
    try {
      input = JSON.parse(values.input);
    } catch (error) {
      throw new UsageError(`--input is not JSON: ${(error as Error).message}`);
    }
    const timeoutMs = Number(values.timeout ?? 120_000);
    if (!Number.isFinite(timeoutMs) || timeoutMs <= 0)
      throw new UsageError("--timeout must be a positive number of milliseconds");
    const client = await connect({ nc: await bus() });
    const result = await client.resume(session, turnId, {
      input,
      userId,
      ...(values.role ? { role: values.role } : {}),
      onEvent: createRunPrinter(values.json),
      timeoutMs,
    });
    return printRunResult(result, { json: values.json });
  },
});
