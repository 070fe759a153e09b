import { MACHINES } from "../../../machines/index.ts";
import { connectBus } from "../../bus/connection.ts";
import { createLogger } from "../../telemetry/log.ts";
import { DEFAULT_AGUI_URL } from "../../viewer/conversationPanel.ts";
import { portArg } from "../../viewer/localHttp.ts";
import { tracesUrlArg } from "../../viewer/turnLinks.ts";
import { startViewer } from "../../viewer/viewerServer.ts";
import { UsageError, untilInterrupted } from "../args.ts";
import { announceReady } from "../childProcess.ts";
import { type CommandInput, defineCommand } from "../command.ts";

const DEFAULT_PORT = 7420;

const help = `conclave viewer: watch the statecharts live in a browser, offline

Usage: conclave viewer [--port N] [options]

  --port N          where the page is served, on 127.0.0.1   [${DEFAULT_PORT}; 0 picks a free port]
  --gateway URL     the AG-UI endpoint the page's conversation panel talks to
                    [${DEFAULT_AGUI_URL}; the page's ?gateway= wins]
  --traces-url URL  the trace UI's page for a turn, linked from the page: {session} and {turn}
                    are replaced, e.g. Jaeger's http://127.0.0.1:16686/search?service=conclave-runner
                    &tags={"conclave.session_id":"{session}","conclave.turn_id":"{turn}"}
                    [none: the page says "tracing off"]

Serves one self-contained page (no internet needed) that draws every machine
(${Object.keys(MACHINES).join(", ")}) from its definition, and each recipe it
sees running (compiled from the run's document), lights up the states of live
actors as turns run (a suspended recipe's human node is marked), and lists the
turns' events as they are written. For the turn shown it links the conversation
panel, the turn and agent machines, the turn's event log and its traces.
Actor states come from runners and workers started with --inspect (or
CONCLAVE_INSPECT=1), e.g. \`npx conclave up --inspect\`. NATS must be up when it
starts (else it exits 3 at once, naming the URL); once connected it rides out
restarts. Runs until interrupted.`;

const FLAGS = {
  port: { type: "string" },
  gateway: { type: "string" },
  "traces-url": { type: "string" },
} as const;

export default defineCommand({ help, flags: FLAGS, role: "observer", longLived: true, run });

async function run({ values, connectionOptions }: CommandInput<typeof FLAGS>): Promise<number> {
  const port = portArg(values.port, DEFAULT_PORT);
  if (port === null) throw new UsageError("--port must be a whole number from 0 to 65535");
  const gateway = values.gateway ?? DEFAULT_AGUI_URL;
  if (!/^https?:\/\/[^\s/]+/i.test(gateway)) throw new UsageError("--gateway must be an http(s) URL");
  const tracesUrl = tracesUrlArg(values["traces-url"]);
  if (tracesUrl === null)
    throw new UsageError("--traces-url must be an http(s) URL, with {session} and {turn} where the turn goes");
  const log = createLogger("viewer");
  // Not waiting for NATS as a runner does: a viewer started with NATS down says so at once (exit 3, with
  // the URL tried), while once connected it reconnects forever, riding out a server restart.
  const nc = await connectBus({ ...connectionOptions(), persistent: false, reconnectAttempts: -1 });
  try {
    // A PortInUseError is a usage error (exit status 2) of its own.
    const viewer = await startViewer(nc, { machines: MACHINES, port, log, gateway, tracesUrl });
    console.log(`Conclave viewer: open ${viewer.url}`);
    announceReady({ url: viewer.url });
    await untilInterrupted();
    await viewer.close();
    await nc.drain();
  } finally {
    if (!nc.isClosed()) await nc.close();
  }
  return 0;
}
