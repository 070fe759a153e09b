import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { printable } from "../../client/printable.ts";
import { LedgerStore } from "../../ledgers/ledgerStore.ts";
import { replayLedgers, replaySession } from "../../runtime/replay.ts";
import { SessionStore } from "../../runtime/sessionStore.ts";
import { readLoggedMessages } from "../../verify/logReader.ts";
import { describeVerify, VERIFY_LEVELS, type VerifyLevel, verifySession } from "../../verify/verify.ts";
import { sessionArg, UsageError } from "../args.ts";
import { defineCommand } from "../command.ts";
import { EXIT } from "../failures.ts";

const help = `conclave verify: run a session's checks and show each with its evidence

Usage: conclave verify SESSION [--level quick|full] [--from-start] [--json]

quick: the event log's contiguity (every stored message a valid event, each
turn's seq 0..n without gap or repeat, at most one TURN_COMPLETED, nothing
after it but rollbacks).
full (the default): also each recipe run's output against its declared
interface.outputs, the ledgers folded again from the log against their stored
projection, and the session state replayed from the log against the stored
state (what \`conclave replay\` checks). Both replays start from the session's
latest checkpoint and fold only what was stored after it (from the start when
there is none or it cannot be read; always with --from-start). Exit status 1
when a check fails.`;

export default defineCommand({
  help,
  flags: {
    session: { type: "string", short: "s" },
    level: { type: "string" },
    "from-start": { type: "boolean" },
    json: { type: "boolean" },
  },
  positionals: true,
  role: "runner",
  async run({ values, positionals, bus }) {
    if (positionals.length > 1 || (positionals.length === 1 && values.session))
      throw new UsageError("give the session once, e.g. conclave verify demo");
    const session = sessionArg(values.session ?? positionals[0]);
    const level = (values.level ?? "full") as VerifyLevel;
    if (!VERIFY_LEVELS.includes(level))
      throw new UsageError(`--level must be one of ${VERIFY_LEVELS.join(", ")}, not ${values.level}`);
    const from = values["from-start"] ? "start" : "checkpoint";
    const nc = await bus();
    let opened: Promise<SessionStore> | undefined;
    const sessions = () => {
      opened ??= SessionStore.open(nc);
      return opened;
    };
    const report = await verifySession(session, level, {
      messages: () => readLoggedMessages(nc, session),
      replayLedgers: async () => replayLedgers(await LedgerStore.open(nc), await sessions(), session, { from }),
      replayState: async () =>
        replaySession(jetstream(nc), await jetstreamManager(nc), await sessions(), session, { from }),
    });
    if (values.json) console.log(JSON.stringify(report, null, 2));
    else for (const line of describeVerify(report)) console.log(printable(line, { newlines: false }));
    return report.ok ? EXIT.ok : EXIT.turnFailed;
  },
});
