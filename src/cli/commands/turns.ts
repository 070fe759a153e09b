import { connect } from "../../client/client.ts";
import { printable } from "../../client/printable.ts";
import { sessionArg } from "../args.ts";
import { defineCommand } from "../command.ts";
import { EXIT } from "../failures.ts";

const help = `conclave turns: where each turn of a session stands

Usage: conclave turns --session <id> [--json]

Status: pending (accepted, stored in the WAL) → inflight (a runner has it) →
done (Complete, PartialSuccess or Cancelled), failed (crashed, poison, or not
stored) or expired (waited too long); a recipe run may be suspended (waiting
at a human node, named) until it is answered.
With --json, one JSON line per turn. No turns yet is an empty result, not a
failure: no output, and a note on stderr unless --json.`;

export default defineCommand({
  help,
  flags: { session: { type: "string", short: "s" }, json: { type: "boolean" } },
  role: "observer",
  async run({ values, bus }) {
    const session = sessionArg(values.session);
    // On a server where no turn ran yet the status bucket does not exist: an empty result.
    const turns = await (await connect({ nc: await bus() })).turns(session);
    if (turns.length === 0 && !values.json) console.error(`no turns yet for session ${session}`);
    for (const turn of turns) {
      if (values.json) console.log(JSON.stringify(turn));
      else
        console.log(
          printable(
            `turn ${String(turn.turn_id).padStart(4)}  ${turn.status.padEnd(9)} ${turn.outcome ?? ""}${turn.reason ? ` (${turn.reason})` : ""}${turn.suspended ? `at '${turn.suspended.node}': ${turn.suspended.prompt}` : ""}  attempts ${turn.attempts}${turn.runner ? `  runner ${turn.runner}` : ""}`,
            { newlines: false },
          ),
        );
    }
    return EXIT.ok;
  },
});
