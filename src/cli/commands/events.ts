import { connect } from "../../client/client.ts";
import { sessionArg, UsageError } from "../args.ts";
import { defineCommand } from "../command.ts";
import { EXIT } from "../failures.ts";
import { createEventPrinter } from "../render.ts";

const help = `conclave events: read a session's event log back from JetStream

Usage: conclave events --session <id> [--turn N] [--from-seq N] [--follow] [--json [--positions]]

  --session ID   the session
  --turn N       only this turn
  --from-seq N   start at this position of the log (see --positions)
  --follow       go on with live events until interrupted
  --json         one JSON line per event (the stored EngineEvent)
  --positions    with --json, one {"position":N,"event":{…}} per line: resume
                 after the last one with --from-seq N+1

Nothing stored for the session (or no turn run on this server yet) is an empty
result, not a failure: no output, and a note on stderr unless --json.`;

export default defineCommand({
  help,
  flags: {
    session: { type: "string", short: "s" },
    turn: { type: "string" },
    "from-seq": { type: "string" },
    follow: { type: "boolean" },
    positions: { type: "boolean" },
    json: { type: "boolean" },
  },
  role: "observer",
  async run({ values, bus }) {
    const session = sessionArg(values.session);
    const turn = values.turn === undefined ? undefined : Number(values.turn);
    if (turn !== undefined && (!Number.isInteger(turn) || turn < 1))
      throw new UsageError("--turn must be a whole number from 1");
    const fromSeq = values["from-seq"] === undefined ? undefined : Number(values["from-seq"]);
    if (fromSeq !== undefined && (!Number.isInteger(fromSeq) || fromSeq < 1))
      throw new UsageError("--from-seq must be a whole number from 1");

    const nc = await bus();
    const stop = new AbortController();
    const interrupted = () => stop.abort();
    process.once("SIGINT", interrupted);
    try {
      const client = await connect({ nc });
      const print = createEventPrinter(values.json);
      let count = 0;
      for await (const { position, event } of client.events(session, {
        ...(turn !== undefined ? { turnId: turn } : {}),
        ...(fromSeq !== undefined ? { fromSeq } : {}),
        follow: values.follow === true,
        signal: stop.signal,
      })) {
        count += 1;
        if (values.json && values.positions) console.log(JSON.stringify({ position, event }));
        else print(event);
      }
      if (count === 0 && !values.json)
        console.error(`no events stored for session ${session}${turn ? ` turn ${turn}` : ""}`);
      return EXIT.ok;
    } finally {
      process.off("SIGINT", interrupted);
    }
  },
});
