import { connectBus } from "../../bus/connection.ts";
import { INSPECT_HELP, processInspection } from "../../inspect/enable.ts";
import { createLogger } from "../../runtime/log.ts";
import { Runner } from "../../runtime/runner/runner.ts";
import { toolPolicyFromEnv } from "../../tools/policyFile.ts";
import { CONNECTION_FLAGS, CONNECTION_HELP, connectionFrom, parse, untilInterrupted } from "../args.ts";
import { announceReady } from "../childProcess.ts";
import { EXIT_HELP } from "../failures.ts";
import { logStrayRejections } from "../strayRejections.ts";

export const help = `conclave runner: host session and turn actors; accept turns on conclave.turn.submit.<session_id>

Usage: conclave runner [--inspect] [options]

Runs until interrupted (Ctrl-C); on SIGINT/SIGTERM it stops accepting turns and
lets running ones finish. Start several for more capacity: they share a queue group.

Tool policy: CONCLAVE_TOOL_POLICY names a JSON or YAML file with the runner's
policy for agents' tool calls (README, "Tools"); a recipe's policy.tools applies
too, and for each call the stricter wins.

${INSPECT_HELP}

${CONNECTION_HELP}

${EXIT_HELP}`;

export async function run(argv: string[]): Promise<number> {
  const { values } = parse(argv, { ...CONNECTION_FLAGS, inspect: { type: "boolean" } });
  if (values.help) {
    console.log(help);
    return 0;
  }
  const log = createLogger("runner");
  const toolPolicy = toolPolicyFromEnv(); // a bad policy file stops here, before anything connects
  logStrayRejections(log);
  const options = connectionFrom(values, "runner", true);
  const nc = await connectBus(options);
  const inspection = processInspection(nc, "runner", values.inspect);
  const runner = await Runner.start(nc, {
    log,
    ...(toolPolicy ? { recipes: { toolPolicy } } : {}),
    ...(inspection ? { inspect: inspection.observer } : {}),
  });
  log.info(`serving turns on ${options.url}${inspection ? `; inspection on ${inspection.subject}` : ""}`);
  announceReady();
  await untilInterrupted();
  await runner.stop();
  await nc.drain();
  return 0;
}
