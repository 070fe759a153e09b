import { resolveAgents } from "../../agents/loadAgents.ts";
import { setting } from "../../config/load.ts";
import { INSPECT_HELP, processInspection } from "../../inspect/enable.ts";
import { backendFromEnv, loadBackendPackages } from "../../llm/backendFromEnv.ts";
import { DEFAULT_LLM_MODEL, describeLlm, llmConfigFromEnv } from "../../llm/config.ts";
import { loadSkills } from "../../skills/load.ts";
import { createLogger } from "../../telemetry/log.ts";
import { agentModuleTools, mergeTools, resolveTools } from "../../tools/loadTools.ts";
import { loadMcpConfigFile, McpConfigError } from "../../tools/mcp/config.ts";
import { startWorker } from "../../workers/startWorker.ts";
import { CORE_SERVICES, type CoreService } from "../../workers/workerOptions.ts";
import { UsageError, untilInterrupted } from "../args.ts";
import { announceReady } from "../childProcess.ts";
import { defineCommand } from "../command.ts";
import { logStrayRejections } from "../strayRejections.ts";

const help = `conclave worker: spawn a worker process hosting agents and/or core services

Usage: conclave worker --agents <list> [--tools <list>] [--mcp <file>] [--services <list>] [--skills <dir>] [--inspect] [options]

  --agents LIST      agents to host, comma-separated: built-in ones by pattern,
                     '*' matching anything ('emotion.*', 'inhibition.censor,monitoring.*',
                     '*'), and modules of your own (./my-agents.js) whose exports
                     are agents made with defineAgent; the tools such a module
                     exports (made with defineTool) are hosted with them
  --tools LIST       tools to host, comma-separated: 'builtin' (disk_usage,
                     process_list, sandbox_write) and modules of your own
                     (./my-tools.js) whose exports are tools made with defineTool;
                     each is served on conclave.tool.<name>
  --mcp FILE         MCP servers whose tools to host too: a JSON file in the
                     common format, {"mcpServers": {"<name>": {"command": "...",
                     "args": [...], "env": {...}} or {"url": "http://..."}}};
                     each tool is served on conclave.tool.mcp_<server>_<tool>,
                     a lost server is reconnected, a changed list announced
                     (needs the optional package @modelcontextprotocol/sdk)
  --services LIST    core actors to host: ${CORE_SERVICES.join(", ")} (comma-separated)
  --skills DIR       a skills directory (default: CONCLAVE_SKILLS_DIR when set, else
                     none), loaded once: each agent request gets the skills its
                     user message loads (ctx.skills; built-in agents in LLM mode
                     follow their instructions), named in AGENT_COMPLETED
                     (see docs/skills.md; conclave skills select shows the choice)

Each agent is served on conclave.agent.<agent_id>, announced to the runners and
the scheduler (conclave.agents.announce), and as a NATS service (ping/info/stats). Several workers may host the same agent: requests
are spread over them (queue group). Runs until interrupted.

Thinking: with OPENAI_API_KEY set, agents, council, voice and critics call OpenAI
with ${DEFAULT_LLM_MODEL}; with OPENAI_BASE_URL (or CONCLAVE_LLM_BASE_URL) they call that
OpenAI-compatible endpoint instead (Ollama, vLLM, llama.cpp's server); OPENAI_MODEL
(or CONCLAVE_LLM_MODEL) names the model. Otherwise the deterministic offline model
answers. The model is logged at start; conclave config checks the settings.

${INSPECT_HELP}`;

export default defineCommand({
  help,
  flags: {
    agents: { type: "string" },
    tools: { type: "string" },
    mcp: { type: "string" },
    services: { type: "string" },
    skills: { type: "string" },
    inspect: { type: "boolean" },
  },
  role: "worker",
  longLived: true,
  async run({ values, bus }) {
    if (!values.agents && !values.services && !values.tools && !values.mcp)
      throw new UsageError("give --agents, --tools, --mcp, --services, or several of them");
    const agents = values.agents ? await resolveAgents(values.agents) : [];
    // The tools an agent module exports are hosted with its agents, beside the --tools ones.
    const tools = mergeTools(
      values.agents ? await agentModuleTools(values.agents) : [],
      values.tools ? await resolveTools(values.tools) : [],
    );
    const mcpServers = values.mcp ? await mcpServersOf(values.mcp) : undefined;
    const services = (values.services ?? "")
      .split(",")
      .map((name) => name.trim())
      .filter(Boolean);
    for (const name of services) {
      if (!(CORE_SERVICES as readonly string[]).includes(name))
        throw new UsageError(`unknown service '${name}'; choose from ${CORE_SERVICES.join(", ")}`);
    }
    const skillsDir = values.skills ?? setting(process.env, "CONCLAVE_SKILLS_DIR");
    // Checked before connecting, which waits for the server: a bad skill fails at once (the worker loads them again).
    if (skillsDir) loadSkills(skillsDir);
    const backend = backendFromEnv();
    await loadBackendPackages(backend);
    const log = createLogger("worker");
    log.info(`model: ${describeLlm(llmConfigFromEnv())}`);
    logStrayRejections(log);
    const nc = await bus();
    const inspection = processInspection(nc, "worker", values.inspect);
    const worker = await startWorker({
      nc,
      agents,
      tools,
      ...(mcpServers ? { mcpServers } : {}),
      services: services as CoreService[],
      ...(skillsDir ? { skills: { dir: skillsDir } } : {}),
      log,
      backend,
      ...(inspection ? { serve: { inspect: inspection.observer } } : {}),
    });
    log.info(
      `serving ${[...worker.agents, ...worker.tools.map((name) => `tool ${name}`), ...services].join(", ")} (thinking: ${backend.name})${inspection ? `; inspection on ${inspection.subject}` : ""}`,
    );
    announceReady({ agents: worker.agents, tools: worker.tools });
    await untilInterrupted();
    await worker.stop();
    return 0;
  },
});

/** The servers of a `--mcp` file, or a usage error saying what is wrong with it. */
async function mcpServersOf(file: string): Promise<Record<string, unknown>> {
  try {
    return Object.fromEntries(await loadMcpConfigFile(file));
  } catch (error) {
    if (error instanceof McpConfigError) throw new UsageError(`--mcp: ${error.message}`);
    throw error;
  }
}
