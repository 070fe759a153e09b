import { MACHINES } from "../../../machines/index.ts";
import { createLogger } from "../../telemetry/log.ts";
import { portArg } from "../../viewer/localHttp.ts";
import { startViewer } from "../../viewer/viewerServer.ts";
import { UsageError, untilInterrupted } from "../args.ts";
import { announceReady } from "../childProcess.ts";
import { type CommandInput, defineCommand } from "../command.ts";

const DEFAULT_PORT = 7420;

const help = `conclave viewer: watch the statecharts live in a browser, offline

Usage: conclave viewer [--port N] [options]

  --port N   where the page is served, on 127.0.0.1   [${DEFAULT_PORT}; 0 picks a free port]

Serves one self-contained page (no internet needed) that draws every machine
(${Object.keys(MACHINES).join(", ")}) from its definition, and each recipe it
sees running (compiled from the run's document), lights up the states of live
actors as turns run (a suspended recipe's human node is marked), and lists the
turns' events as they are written.
Actor states come from runners and workers started with --inspect (or
CONCLAVE_INSPECT=1), e.g. \`npx conclave up --inspect\`. Runs until interrupted.`;

const FLAGS = { port: { type: "string" } } as const;

export default defineCommand({ help, flags: FLAGS, role: "observer", longLived: true, run });

async function run({ values, bus }: CommandInput<typeof FLAGS>): Promise<number> {
  const port = portArg(values.port, DEFAULT_PORT);
  if (port === null) throw new UsageError("--port must be a whole number from 0 to 65535");
  const log = createLogger("viewer");
  // A PortInUseError is a usage error (exit status 2) of its own.
  const viewer = await startViewer(await bus(), { machines: MACHINES, port, log });
  console.log(`Conclave viewer: open ${viewer.url}`);
  announceReady();
  await untilInterrupted();
  await viewer.close();
  return 0;
}
