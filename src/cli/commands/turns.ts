import { jetstreamManager } from "@nats-io/jetstream";
import { connectBus } from "../../bus/connection.ts";
import { buckets } from "../../bus/subjects.ts";
import { TurnStatusStore } from "../../runtime/turnStatusStore.ts";
import { CONNECTION_FLAGS, CONNECTION_HELP, connectionFrom, parse, sessionArg } from "../args.ts";
import { EXIT, EXIT_HELP } from "../failures.ts";
import { emptyWhenNotStored } from "../notStored.ts";

export const help = `conclave turns: where each turn of a session stands

Usage: conclave turns --session <id> [--json]

Status: pending (accepted, stored in the WAL) → inflight (a runner has it) →
done, failed (crashed, poison, or not stored) or expired (waited too long).
With --json, one JSON line per turn. No turns yet is an empty result, not a
failure: no output, and a note on stderr unless --json.

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
  const session = sessionArg(values.session);
  const nc = await connectBus(connectionFrom(values, "observer", false));
  try {
    // The observer may read the status bucket but not create it: on a server where
    // no turn ran yet, it does not exist, and that is an empty result.
    const jsm = await jetstreamManager(nc);
    const turns = await emptyWhenNotStored(
      jsm.streams.info(`KV_${buckets.turns}`).then(async () => (await TurnStatusStore.open(nc)).list(session)),
    );
    if (turns.length === 0 && !values.json) console.error(`no turns yet for session ${session}`);
    for (const turn of turns) {
      if (values.json) console.log(JSON.stringify(turn));
      else
        console.log(
          `turn ${String(turn.turn_id).padStart(4)}  ${turn.status.padEnd(8)} ${turn.outcome ?? ""}${turn.reason ? ` (${turn.reason})` : ""}  attempts ${turn.attempts}${turn.runner ? `  runner ${turn.runner}` : ""}`,
        );
    }
    return EXIT.ok;
  } finally {
    await nc.close();
  }
}
