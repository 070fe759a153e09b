import { INSPECT_HELP, processInspection } from "../../inspect/enable.ts";
import { describeLlm, llmConfigFromEnv } from "../../llm/config.ts";
import { hostsCognition } from "../../runtime/runner/parts.ts";
import { Runner } from "../../runtime/runner/runner.ts";
import { createLogger } from "../../telemetry/log.ts";
import { toolPolicyFromEnv } from "../../tools/policyFile.ts";
import { UsageError, untilInterrupted } from "../args.ts";
import { announceReady } from "../childProcess.ts";
import { defineCommand } from "../command.ts";
import { PIPELINE_HELP, pipelineOption } from "../pipelineOption.ts";
import { logStrayRejections } from "../strayRejections.ts";

const help = `conclave runner: host session and turn actors; accept turns on conclave.turn.submit.<session_id>

Usage: conclave runner [--cognition runner|workers] [--pipeline P] [--inspect] [options]

Runs until interrupted (Ctrl-C); on SIGINT/SIGTERM it stops accepting turns and
lets running ones finish. Start several for more capacity: they share a queue group.

--cognition runner   run the scheduler, the council (with the voice) and the
                     critics in this process, as its actors (--inspect shows
                     them), with the model the environment configures
                     (CONCLAVE_LLM_*, else offline): four hops fewer per turn.
                     Agents and memory stay on workers.
--cognition workers  ask workers for them (the default; CONCLAVE_RUNNER_COGNITION
                     sets the default too).

${PIPELINE_HELP}

Tool policy: CONCLAVE_TOOL_POLICY names a JSON or YAML file with the runner's
policy for agents' tool calls (docs/tools.md); a recipe's policy.tools applies
too, and for each call the stricter wins.

${INSPECT_HELP}`;

function cognitionFlag(value: string): boolean {
  if (value === "runner" || value === "workers") return value === "runner";
  throw new UsageError(`--cognition must be 'runner' or 'workers', not '${value}'`);
}

export default defineCommand({
  help,
  flags: { inspect: { type: "boolean" }, cognition: { type: "string" }, pipeline: { type: "string" } },
  role: "runner",
  longLived: true,
  async run({ values, bus, connectionOptions }) {
    const log = createLogger("runner");
    const toolPolicy = toolPolicyFromEnv(); // a bad policy file stops here, before anything connects
    const hostCognition = values.cognition === undefined ? undefined : cognitionFlag(values.cognition);
    const pipeline = pipelineOption(values.pipeline); // a bad value or recipe stops here too
    logStrayRejections(log);
    const options = connectionOptions();
    log.info(
      hostsCognition(hostCognition)
        ? `model: ${describeLlm(llmConfigFromEnv())}`
        : "model: none in the runner (the scheduler, council and critics run on workers, with theirs)",
    );
    const nc = await bus();
    const inspection = processInspection(nc, "runner", values.inspect);
    const runner = await Runner.start(nc, {
      log,
      heartbeat: options,
      ...(hostCognition !== undefined ? { hostCognition } : {}),
      ...(pipeline ? { pipeline } : {}),
      ...(toolPolicy ? { recipes: { toolPolicy } } : {}),
      ...(inspection ? { inspect: inspection.observer } : {}),
    });
    log.info(
      `serving turns on ${options.servers.join(",")}${inspection ? `; inspection on ${inspection.subject}` : ""}`,
    );
    announceReady();
    await untilInterrupted();
    await runner.stop();
    return 0;
  },
});
