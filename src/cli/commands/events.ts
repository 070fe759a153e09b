import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connectBus } from "../../bus/connection.ts";
import { readEvents } from "../../eventlog/reader.ts";
import { CONNECTION_FLAGS, CONNECTION_HELP, connectionFrom, parse, sessionArg, UsageError } from "../args.ts";
import { EXIT, EXIT_HELP } from "../failures.ts";
import { emptyWhenNotStored } from "../notStored.ts";
import { createEventPrinter } from "../render.ts";

export const help = `conclave events: read a session's event log back from JetStream

Usage: conclave events --session <id> [--turn N] [--json]

  --session ID   the session
  --turn N       only this turn
  --json         one JSON line per event (the stored EngineEvent)

Nothing stored for the session (or no turn run on this server yet) is an empty
result, not a failure: no output, and a note on stderr unless --json.

${CONNECTION_HELP}

${EXIT_HELP}`;

export async function run(argv: string[]): Promise<number> {
  const { values } = parse(argv, {
    ...CONNECTION_FLAGS,
    session: { type: "string", short: "s" },
    turn: { type: "string" },
    json: { type: "boolean" },
  });
  if (values.help) {
    console.log(help);
    return 0;
  }
  const session = sessionArg(values.session);
  const turn = values.turn === undefined ? undefined : Number(values.turn);
  if (turn !== undefined && (!Number.isInteger(turn) || turn < 1))
    throw new UsageError("--turn must be a whole number from 1");

  const nc = await connectBus(connectionFrom(values, "observer", false));
  try {
    const events = await emptyWhenNotStored(readEvents(jetstream(nc), await jetstreamManager(nc), session, turn));
    if (events.length === 0 && !values.json)
      console.error(`no events stored for session ${session}${turn ? ` turn ${turn}` : ""}`);
    const print = createEventPrinter(values.json);
    for (const event of events) print(event);
    return EXIT.ok;
  } finally {
    await nc.close();
  }
}
