import { connectBus } from "../../bus/connection.ts";
import { TurnStatusStore } from "../../runtime/turnStatusStore.ts";
import { CONNECTION_FLAGS, CONNECTION_HELP, connectionFrom, parse, sessionArg } from "../args.ts";

export const help = `conclave turns: where each turn of a session stands

Usage: conclave turns --session <id> [--json]

Status: pending (accepted, stored in the WAL) → inflight (a runner has it) →
done, failed (crashed, poison, or not stored) or expired (waited too long).

${CONNECTION_HELP}`;

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
    const turns = await (await TurnStatusStore.open(nc)).list(session);
    if (turns.length === 0) {
      console.error(`no turns for session ${session}`);
      return 1;
    }
    for (const turn of turns) {
      if (values.json) console.log(JSON.stringify(turn));
      else
        console.log(
          `turn ${String(turn.turn_id).padStart(4)}  ${turn.status.padEnd(8)} ${turn.outcome ?? ""}${turn.reason ? ` (${turn.reason})` : ""}  attempts ${turn.attempts}${turn.runner ? `  runner ${turn.runner}` : ""}`,
        );
    }
    return 0;
  } finally {
    await nc.close();
  }
}
