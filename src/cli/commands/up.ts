import { spawn } from "node:child_process";
import { DEFAULT_NATS_URL } from "../../bus/connection.ts";
import { setting } from "../../config/load.ts";
import { inspectionWanted } from "../../inspect/enable.ts";
import { DEFAULT_LLM_MODEL } from "../../llm/config.ts";
import { portArg } from "../../viewer/localHttp.ts";
import { UsageError, untilInterrupted } from "../args.ts";
import { defineCommand } from "../command.ts";
import { DEFAULT_LAYOUT, LLM_LAYOUT, MAX_CLUSTER_NODES, startLocalCluster } from "../localCluster.ts";
import { PIPELINE_HELP, pipelineEnv } from "../pipelineOption.ts";

const help = `conclave up: start nats-server, a runner and the workers, until interrupted

Usage: conclave up [--nats-url URL] [--data-dir DIR] [--cluster N] [--agents LIST] [--tools LIST]
                   [--pipeline P] [--serve [--serve-port N]] [--exec CMD] [--inspect]

  --nats-url URL   where NATS is, or where to start it (loopback only)  [$CONCLAVE_NATS_URL, $NATS_URL, ${DEFAULT_NATS_URL}]
  --data-dir DIR   JetStream data when conclave starts nats-server     [$CONCLAVE_DATA_DIR, .conclave]
  --cluster N      start a cluster of N nats-server nodes (3: one may fail) on the URL's port and
                   the next ones (routes 2000 above), stores in DIR/nats-cluster; streams and KV
                   buckets get N replicas (CONCLAVE_REPLICAS=N); see \`conclave status\`
  --agents LIST    also start a worker hosting these agents: your modules (./my-agents.js,
                   exporting agents made with defineAgent, and the tools made with defineTool
                   they export, hosted with them) and/or built-in patterns
  --tools LIST     and these tools ('builtin', your modules exporting tools made with defineTool);
                   an agent calls a tool it lists in defineAgent's tools
${PIPELINE_HELP}
  --serve          also start the gateway (conclave serve: MCP, AG-UI, A2A) on 127.0.0.1, kept
                   running like the others; its access and bounds from the environment
                   (CONCLAVE_GATEWAY_TOKEN, CONCLAVE_GATEWAY_PRINCIPALS, CONCLAVE_GATEWAY_*)
  --serve-port N   the gateway's port, with --serve   [7430]
  --exec CMD       run CMD (through the shell, with CONCLAVE_NATS_URL set) once everything
                   is ready, then stop everything; exits with CMD's status
  --inspect        start the runner and workers with --inspect, for \`conclave viewer\` [$CONCLAVE_INSPECT=1]

Starts, each as its own process:
${DEFAULT_LAYOUT.map(({ name, args }) => `  ${name.padEnd(42)} conclave ${args.join(" ")}`).join("\n")}
The first line says the model: OPENAI_API_KEY alone is OpenAI with ${DEFAULT_LLM_MODEL};
OPENAI_BASE_URL and OPENAI_MODEL (or CONCLAVE_LLM_*, which win) choose another server and
model; with none of them, the deterministic offline model runs (docs/agents.md).
In LLM mode the scheduler, council and critics stay on a worker
(${LLM_LAYOUT[2]!.name}) and the runner asks it: a model call under way survives a runner's death.
nats-server is started with nats.conf unless a server already answers at the URL.
A process that dies is restarted after a backoff (250 ms, doubling with each recent
restart, at most 30 s), as often as it takes; the log says each restart.
Ctrl-C stops everything: the gateway first, then the runner (it finishes running turns), then
the workers.`;

export default defineCommand({
  help,
  flags: {
    "nats-url": { type: "string" },
    "data-dir": { type: "string" },
    inspect: { type: "boolean" },
    agents: { type: "string" },
    tools: { type: "string" },
    exec: { type: "string" },
    cluster: { type: "string" },
    serve: { type: "boolean" },
    "serve-port": { type: "string" },
    pipeline: { type: "string" },
  },
  async run({ values }) {
    const log = (line: string) => console.log(`[up] ${line}`);
    const clusterNodes = values.cluster === undefined ? undefined : clusterSize(values.cluster);
    const serve = gatewayOf(values.serve, values["serve-port"]);
    const pipeline = pipelineEnv(values.pipeline); // checked before anything starts
    const cluster = await startLocalCluster({
      url: values["nats-url"] ?? setting(process.env, "CONCLAVE_NATS_URL"),
      dataDir: values["data-dir"] ?? setting(process.env, "CONCLAVE_DATA_DIR"),
      log,
      inspect: inspectionWanted(values.inspect),
      ...(values.agents ? { agents: values.agents } : {}),
      ...(values.tools ? { tools: values.tools } : {}),
      ...(clusterNodes !== undefined ? { clusterNodes } : {}),
      ...(serve ? { serve } : {}),
      ...(pipeline.CONCLAVE_PIPELINE ? { env: pipeline } : {}),
    });
    if (pipeline.CONCLAVE_PIPELINE) log(`pipeline: ${pipeline.CONCLAVE_PIPELINE} (sessions that choose none)`);
    if (values.exec) return runThenStop(values.exec, cluster, log);
    log(`Conclave is up on ${cluster.url}. Try: npx conclave send --session demo "hello"   (Ctrl-C to stop)`);
    if (inspectionWanted(values.inspect)) log("inspection is on: watch the actors with npx conclave viewer");
    // The supervisor restarts a process that dies (with a backoff capped at 30 s, never giving up) and says so.
    await untilInterrupted();
    log("stopping…");
    await cluster.stop();
    log("stopped");
    return 0;
  },
});

/** `--cluster N`: a whole number of nodes, 1 to MAX_CLUSTER_NODES. */
function clusterSize(text: string): number {
  const nodes = /^\d+$/.test(text.trim()) ? Number(text.trim()) : Number.NaN;
  if (!(nodes >= 1 && nodes <= MAX_CLUSTER_NODES)) {
    throw new UsageError(`--cluster must be a whole number of nodes from 1 to ${MAX_CLUSTER_NODES}, e.g. --cluster 3`);
  }
  return nodes;
}

/** `--serve [--serve-port N]`: the gateway's settings, or undefined without `--serve`. */
function gatewayOf(serve: boolean | undefined, portText: string | undefined): { port?: number } | undefined {
  if (!serve) {
    if (portText !== undefined) throw new UsageError("--serve-port is for --serve: add --serve to start the gateway");
    return undefined;
  }
  if (portText === undefined) return {};
  // Not 0: a gateway restarted on another free port would not be where its callers look.
  const port = portArg(portText, 0);
  if (port === null || port === 0) throw new UsageError("--serve-port must be a whole number from 1 to 65535");
  return { port };
}

/** `--exec`: the command runs against the cluster, which stops when it exits (or on Ctrl-C). */
async function runThenStop(
  command: string,
  cluster: { url: string; env: NodeJS.ProcessEnv; stop(): Promise<void> },
  log: (line: string) => void,
): Promise<number> {
  log(`running: ${command}`);
  const child = spawn(command, {
    shell: true,
    stdio: "inherit",
    env: { ...cluster.env, CONCLAVE_NATS_URL: cluster.url },
  });
  const interrupted = () => child.kill("SIGINT");
  process.once("SIGINT", interrupted);
  process.once("SIGTERM", interrupted);
  const status = await new Promise<number>((resolve) => {
    child.once("error", (error) => {
      log(`cannot run ${command}: ${error.message}`);
      resolve(127);
    });
    child.once("exit", (code, signal) => resolve(code ?? (signal ? 128 + 2 : 1)));
  });
  process.off("SIGINT", interrupted);
  process.off("SIGTERM", interrupted);
  log(`${command} exited with status ${status}; stopping…`);
  await cluster.stop();
  log("stopped");
  return status;
}
