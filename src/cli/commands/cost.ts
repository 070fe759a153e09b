import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect } from "../../client/client.ts";
import { printable } from "../../client/printable.ts";
import { priceTableFromEnv, readPriceTable } from "../../cost/prices.ts";
import { type CostSummary, describeCost } from "../../cost/summary.ts";
import { replayCost } from "../../runtime/checkpoints/costReplay.ts";
import { SessionStore } from "../../runtime/sessionStore.ts";
import { sessionArg, UsageError } from "../args.ts";
import { defineCommand } from "../command.ts";
import { EXIT } from "../failures.ts";

const help = `conclave cost: what a session's turns cost, from the tokens they recorded

Usage: conclave cost SESSION [--prices FILE] [--from-start] [--json]

The session's tokens (each turn's TURN_COMPLETED usage) in total and per
actor, model, skill and turn, priced with the price table: --prices, else
the file CONCLAVE_PRICES names (JSON or YAML, docs/cost.md). Models the
table does not price show tokens only. With --json, the CostSummary.

It starts from the session's latest replay checkpoint and reads only the
turns after it, so it connects as the runner role, which may read the
checkpoint (as \`conclave replay\` does). With no checkpoint, or one it
cannot use (unreadable, a fork's, or actors the table prices on different
models), it reads every turn and says so in a note. --from-start reads every
turn, in the client role (as the client's cost() does).`;

export default defineCommand({
  help,
  flags: {
    session: { type: "string", short: "s" },
    prices: { type: "string" },
    "from-start": { type: "boolean" },
    json: { type: "boolean" },
  },
  positionals: true,
  role: "client",
  async run({ values, positionals, bus }) {
    if (positionals.length > 1 || (positionals.length === 1 && values.session))
      throw new UsageError("give the session once, e.g. conclave cost demo");
    const session = sessionArg(values.session ?? positionals[0]);
    let summary: CostSummary;
    if (values["from-start"]) {
      const client = await connect({ nc: await bus() });
      summary = await client.cost(session, values.prices ? { prices: values.prices } : {});
    } else {
      const table = values.prices ? readPriceTable(values.prices) : priceTableFromEnv();
      const nc = await bus("runner");
      const clients = { js: jetstream(nc), jsm: await jetstreamManager(nc) };
      const replayed = await replayCost(clients, await SessionStore.open(nc), session, { table });
      if (replayed.note && !values.json) console.error(`note: ${replayed.note}`);
      summary = replayed.summary;
    }
    if (values.json) console.log(JSON.stringify(summary, null, 2));
    else for (const line of describeCost(summary)) console.log(printable(line, { newlines: false }));
    return EXIT.ok;
  },
});
