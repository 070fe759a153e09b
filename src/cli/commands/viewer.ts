import { MACHINES } from "../../../machines/index.ts";
import { connectBus } from "../../bus/connection.ts";
import { createLogger } from "../../runtime/log.ts";
import { portArg } from "../../viewer/localHttp.ts";
import { startViewer } from "../../viewer/viewerServer.ts";
import { CONNECTION_FLAGS, CONNECTION_HELP, connectionFrom, parse, UsageError, untilInterrupted } from "../args.ts";
import { announceReady } from "../childProcess.ts";
import { EXIT_HELP } from "../failures.ts";

const DEFAULT_PORT = 7420;

export const help = `conclave viewer: watch the statecharts live in a browser, offline

Usage: conclave viewer [--port N] [options]

  --port N   where the page is served, on 127.0.0.1   [${DEFAULT_PORT}; 0 picks a free port]

Serves one self-contained page (no internet needed) that draws every machine
(${Object.keys(MACHINES).join(", ")}) from its definition, and each recipe it
sees running (compiled from the run's document), lights up the states of live
actors as turns run (a suspended recipe's human node is marked), and lists the
turns' events as they are written.
Actor states come from runners and workers started with --inspect (or
CONCLAVE_INSPECT=1), e.g. \`npx conclave up --inspect\`. Runs until interrupted.

${CONNECTION_HELP}

${EXIT_HELP}`;

export async function run(argv: string[]): Promise<number> {
  const { values } = parse(argv, { ...CONNECTION_FLAGS, port: { type: "string" } });
  if (values.help) {
    console.log(help);
    return 0;
  }
  const port = portArg(values.port, DEFAULT_PORT);
  if (port === null) throw new UsageError("--port must be a whole number from 0 to 65535");
  const log = createLogger("viewer");
  const nc = await connectBus(connectionFrom(values, "observer", true));
  const viewer = await startViewer(nc, { machines: MACHINES, port, log }).catch(async (error: unknown) => {
    await nc.close();
    throw error; // a PortInUseError is a usage error (exit status 2) of its own
  });
  console.log(`Conclave viewer: open ${viewer.url}`);
  announceReady();
  await untilInterrupted();
  await viewer.close();
  await nc.drain();
  return 0;
}
