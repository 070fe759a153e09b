import { MACHINES } from "../../../machines/index.ts";
import { collectInspection } from "../../inspect/collector.ts";
import { inspectSubjectAll } from "../../inspect/record.ts";
import { startStatelyBridge } from "../../inspect/statelyBridge.ts";
import { STATELY_INSPECTOR_URL } from "../../inspect/statelyBridgePage.ts";
import { createLogger } from "../../telemetry/log.ts";
import { portArg } from "../../viewer/localHttp.ts";
import { UsageError, untilInterrupted } from "../args.ts";
import { announceReady } from "../childProcess.ts";
import { type CommandInput, defineCommand } from "../command.ts";

const DEFAULT_PORT = 7421;

const help = `conclave inspect: watch the actors of every process in the Stately inspector

Usage: conclave inspect [--port N] [options]

  --port N   where the inspector page is served, on 127.0.0.1   [${DEFAULT_PORT}; 0 picks a free port]

Collects the inspection events that runners and workers started with --inspect
(or CONCLAVE_INSPECT=1) publish on ${inspectSubjectAll}, and relays them to the
Stately inspector. Open the printed URL in a browser. The inspector UI itself is
loaded from ${STATELY_INSPECTOR_URL}, so it needs internet access; offline, use
\`conclave viewer\`. Runs until interrupted.`;

const FLAGS = { port: { type: "string" } } as const;

export default defineCommand({ help, flags: FLAGS, role: "observer", longLived: true, run });

async function run({ values, bus }: CommandInput<typeof FLAGS>): Promise<number> {
  const port = portArg(values.port, DEFAULT_PORT);
  if (port === null) throw new UsageError("--port must be a whole number from 0 to 65535");
  const log = createLogger("inspect");
  const nc = await bus();
  // A PortInUseError is a usage error (exit status 2) of its own.
  const bridge = await startStatelyBridge(Object.values(MACHINES), port);
  let invalid = 0;
  const subscription = collectInspection(nc, bridge.push, (subject, reason) => {
    // One line for the first few, then stay quiet: a noisy publisher must not flood the terminal.
    if (++invalid <= 5) log.warn(`skipped a message on ${subject}: ${reason}`);
  });
  console.log(`Stately inspector bridge: open ${bridge.url}`);
  console.log(
    `(the inspector UI loads from ${STATELY_INSPECTOR_URL} and needs internet; offline, use npx conclave viewer)`,
  );
  announceReady();
  await untilInterrupted();
  subscription.unsubscribe();
  await bridge.close();
  return 0;
}
