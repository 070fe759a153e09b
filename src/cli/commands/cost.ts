import { connect } from "../../client/client.ts";
import { printable } from "../../client/printable.ts";
import { describeCost } from "../../cost/summary.ts";
import { sessionArg, UsageError } from "../args.ts";
import { defineCommand } from "../command.ts";
import { EXIT } from "../failures.ts";

const help = `conclave cost: what a session's turns cost, from the tokens they recorded

Usage: conclave cost SESSION [--prices FILE] [--json]

The session's tokens (each turn's TURN_COMPLETED usage) in total and per
actor, model, skill and turn, priced with the price table: --prices, else
the file CONCLAVE_PRICES names (JSON or YAML, docs/cost.md). Models the
table does not price show tokens only. With --json, the CostSummary.`;

export default defineCommand({
  help,
  flags: {
    session: { type: "string", short: "s" },
    prices: { type: "string" },
    json: { type: "boolean" },
  },
  positionals: true,
  role: "client",
  async run({ values, positionals, bus }) {
    if (positionals.length > 1 || (positionals.length === 1 && values.session))
      throw new UsageError("give the session once, e.g. conclave cost demo");
    const session = sessionArg(values.session ?? positionals[0]);
    const client = await connect({ nc: await bus() });
    const summary = await client.cost(session, values.prices ? { prices: values.prices } : {});
    if (values.json) console.log(JSON.stringify(summary, null, 2));
    else for (const line of describeCost(summary)) console.log(printable(line, { newlines: false }));
    return EXIT.ok;
  },
});
