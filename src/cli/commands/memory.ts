import { connectBus } from "../../bus/connection.ts";
import { connect } from "../../client/client.ts";
import { CONNECTION_FLAGS, CONNECTION_HELP, connectionFrom, parse, sessionArg, UsageError } from "../args.ts";
import { EXIT_HELP } from "../failures.ts";

export const help = `conclave memory search: what a session's memory holds about a query

Usage: conclave memory search --session ID "query" [--limit N] [--json]

  --session ID   the session
  --limit N      at most N items  [10]
  --json         one item per line

Lists the user facts, threads (open or closed) and episodes the memory learnt,
best first for the query: topic overlap, then recurrence, then recency.

${CONNECTION_HELP}

${EXIT_HELP}`;

export async function run(argv: string[]): Promise<number> {
  const { values, positionals } = parse(
    argv,
    {
      ...CONNECTION_FLAGS,
      session: { type: "string", short: "s" },
      limit: { type: "string" },
      json: { type: "boolean" },
    },
    true,
  );
  if (values.help) {
    console.log(help);
    return 0;
  }
  const [verb, ...words] = positionals;
  if (verb !== "search")
    throw new UsageError(`unknown memory command '${verb ?? ""}': conclave memory search --session S "query"`);
  const session = sessionArg(values.session);
  const limit = Number(values.limit ?? 10);
  if (!Number.isInteger(limit) || limit < 1 || limit > 100)
    throw new UsageError("--limit must be a whole number from 1 to 100");
  const nc = await connectBus(connectionFrom(values, "client", false));
  try {
    const client = await connect({ nc });
    const items = await client.memory.search(session, words.join(" "), { limit });
    for (const item of items) {
      if (values.json) console.log(JSON.stringify(item));
      else console.log(`${item.kind.padEnd(7)} ${item.text}  [${item.topics.join(", ")}; seen ${item.recurrence}×]`);
    }
    if (!values.json && items.length === 0) console.error("nothing in memory for this session yet");
    return 0;
  } finally {
    await nc.close();
  }
}
