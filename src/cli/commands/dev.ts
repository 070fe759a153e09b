import { isModuleSpecifier } from "../../agents/loadAgents.ts";
import { DEFAULT_NATS_URL } from "../../bus/connection.ts";
import { setting } from "../../config/load.ts";
import { DEFAULT_GATEWAY_PORT } from "../../gateway/startGateway.ts";
import { describeLlm, llmConfigFromEnv } from "../../llm/config.ts";
import { checkFeature, optionalFeature } from "../../optionalFeatures.ts";
import { portArg } from "../../viewer/localHttp.ts";
import { watchAgentModules } from "../agentReload.ts";
import { UsageError, untilInterrupted } from "../args.ts";
import { defineCommand } from "../command.ts";
import { AGENTS_WORKER, agentsWorkerArgs, type LocalCluster, startLocalCluster } from "../localCluster.ts";
import { PIPELINE_HELP, pipelineEnv } from "../pipelineOption.ts";

const DEFAULT_VIEWER_PORT = 7420;

/**
 * How long each process may take to serve: longer than `up`'s 20 s, as dev starts seven processes
 * at once, on a machine often busy compiling, where a slow start is no reason to give up.
 */
const READY_TIMEOUT_MS = 60_000;

const help = `conclave dev: everything for developing agents in one command, reloading them as you edit

Usage: conclave dev [--agents LIST] [--tools LIST] [--pipeline P] [--viewer-port N]
                    [--serve-port N] [--nats-url URL] [--data-dir DIR]

  --agents LIST      your agent modules (./my-agent.js, exporting agents made with defineAgent
                     and the tools they call, made with defineTool), and/or built-in patterns;
                     comma-separated, or the flag given again
  --tools LIST       more tools: 'builtin', your modules exporting tools made with defineTool
${PIPELINE_HELP}
  --viewer-port N    the viewer's port, on 127.0.0.1   [${DEFAULT_VIEWER_PORT}]
  --serve-port N     the gateway's port, on 127.0.0.1   [${DEFAULT_GATEWAY_PORT}]
  --nats-url URL     where NATS is, or where to start it (loopback only)  [$CONCLAVE_NATS_URL, ${DEFAULT_NATS_URL}]
  --data-dir DIR     JetStream data when conclave starts nats-server     [$CONCLAVE_DATA_DIR, .conclave]

Starts what \`conclave up --agents LIST --serve --inspect\` starts (nats-server unless one
answers at the URL, a runner, the workers, a worker hosting your agents and the gateway: MCP,
A2A, AG-UI) and the viewer, each its own process, restarted if it dies, all on loopback. Once
they serve it prints the viewer's and the chat's URLs, the gateway's, the model, and how to
send a turn.

Reload: when one of your --agents or --tools modules, or a file of your project it imports,
changes, the worker hosting them is started again beside the old one, which it replaces once
it serves: NATS, the runner and the sessions keep running, and the next turn runs the new
code. Each reload prints one line; a module that fails to load prints one line too, and the
previous agents keep answering.

Ctrl-C stops everything: the gateway and the viewer first, then the runner (it finishes running
turns), then the workers and nats-server.`;

export default defineCommand({
  help,
  flags: {
    agents: { type: "string", multiple: true },
    tools: { type: "string", multiple: true },
    "viewer-port": { type: "string" },
    "serve-port": { type: "string" },
    "nats-url": { type: "string" },
    "data-dir": { type: "string" },
    pipeline: { type: "string" },
  },
  async run({ values }) {
    const log = (line: string) => console.log(`[dev] ${line}`);
    const agents = listOf(values.agents);
    const tools = listOf(values.tools);
    const viewerPort = fixedPort("--viewer-port", values["viewer-port"], DEFAULT_VIEWER_PORT);
    const servePort = fixedPort("--serve-port", values["serve-port"], DEFAULT_GATEWAY_PORT);
    if (viewerPort === servePort) throw new UsageError("--viewer-port and --serve-port must differ");
    const pipeline = pipelineEnv(values.pipeline); // checked before anything starts
    // The gateway needs the MCP SDK, an optional package a new project may not have: dev runs without it.
    const mcp = await checkFeature(optionalFeature("mcp"));
    if (!mcp.available) log(`the gateway (MCP, A2A, AG-UI) is off: it needs @modelcontextprotocol/sdk: ${mcp.install}`);
    const cluster = await startLocalCluster({
      url: values["nats-url"] ?? setting(process.env, "CONCLAVE_NATS_URL"),
      dataDir: values["data-dir"] ?? setting(process.env, "CONCLAVE_DATA_DIR"),
      log,
      inspect: true,
      readyTimeoutMs: READY_TIMEOUT_MS,
      ...(agents ? { agents } : {}),
      ...(tools ? { tools } : {}),
      ...(mcp.available ? { serve: { port: servePort } } : {}),
      // The page's conversation panel talks to this gateway even without the chat URL's ?gateway=.
      viewer: { port: viewerPort, ...(mcp.available ? { gateway: `http://127.0.0.1:${servePort}/ag-ui` } : {}) },
      ...(pipeline.CONCLAVE_PIPELINE ? { env: pipeline } : {}),
    });
    const modules = [agents, tools]
      .flatMap((list) => (list ?? "").split(",").map((item) => item.trim()))
      .filter((item) => item && isModuleSpecifier(item));
    const reload =
      modules.length > 0
        ? watchAgentModules({
            cluster,
            args: [...agentsWorkerArgs({ ...(agents ? { agents } : {}), ...(tools ? { tools } : {}) }), "--inspect"],
            modules,
            log,
            readyTimeoutMs: READY_TIMEOUT_MS,
          })
        : undefined;
    for (const line of await readyBlock(cluster, modules, pipeline.CONCLAVE_PIPELINE)) console.log(line);
    await untilInterrupted();
    log("stopping…");
    await reload?.stop();
    await cluster.stop();
    log("stopped");
    return 0;
  },
});

/** A repeatable list flag: its values joined with commas, or undefined when not given. */
function listOf(values: string[] | undefined): string | undefined {
  const items = (values ?? []).flatMap((value) => value.split(",")).map((item) => item.trim());
  return items.some(Boolean) ? items.filter(Boolean).join(",") : undefined;
}

/** A port the process keeps across restarts (not 0: a restarted one would move where its callers look). */
function fixedPort(flag: string, text: string | undefined, fallback: number): number {
  const port = portArg(text, fallback);
  if (port === null || port === 0) throw new UsageError(`${flag} must be a whole number from 1 to 65535`);
  return port;
}

/** The lines `conclave dev` prints once everything serves: where to look, the model, how to talk to it. */
async function readyBlock(
  cluster: LocalCluster,
  modules: readonly string[],
  pipeline: string | undefined,
): Promise<string[]> {
  const detail = async (name: string) =>
    (await cluster.processes.find((p) => p.name === name)?.current.announced) ?? {};
  const viewer = await detail("viewer");
  const gateway = await detail("serve");
  const hosted = await detail(AGENTS_WORKER);
  const text = (value: unknown, off: string) => (typeof value === "string" ? value : off);
  const viewerUrl = text(viewer.url, "?");
  const chat =
    typeof gateway.aguiUrl === "string"
      ? `${viewerUrl}?gateway=${encodeURIComponent(gateway.aguiUrl)}`
      : "off: the chat talks AG-UI, which is off (conclave doctor says what to install)";
  const names = (value: unknown) => (Array.isArray(value) && value.length > 0 ? value.join(", ") : "none");
  const send = `npx conclave send${cluster.url === DEFAULT_NATS_URL ? "" : ` --nats-url ${cluster.url}`} --session dev "hello"`;
  return [
    "",
    "Conclave dev is running (Ctrl-C stops everything)",
    `  viewer   ${viewerUrl}`,
    `  chat     ${chat}`,
    `  MCP      ${text(gateway.mcpUrl, "off (conclave doctor says what to install)")}`,
    `  A2A      ${text(gateway.a2aCardUrl, "off (conclave doctor says what to install)")}`,
    `  AG-UI    ${text(gateway.aguiUrl, "off (conclave doctor says what to install)")}`,
    `  model    ${describeLlm(llmConfigFromEnv(cluster.env))}`,
    ...(modules.length > 0
      ? [`  agents   ${names(hosted.agents)}: reloaded when ${modules.join(", ")} or a file they import changes`]
      : ["  agents   the built-in ones: add yours with --agents ./my-agent.js"]),
    `  pipeline ${pipeline ?? "cognitive (the built-in agents, council and voice; --pipeline agents: yours alone)"}`,
    `  send     ${send}`,
    "",
  ];
}
