import { AgentDirectory } from "../../agents/directory.ts";
import { connectBus } from "../../bus/connection.ts";
import { CONNECTION_FLAGS, CONNECTION_HELP, connectionFrom, parse } from "../args.ts";
import { EXIT, EXIT_HELP } from "../failures.ts";

export const help = `conclave agents: the agents and tools live workers host

Usage: conclave agents [--json]

Calls the workers' roll (conclave.agents.rollcall) and lists every agent they
announce: id, role, priority, triggers, cooldown, token budget, and whether it
has an output schema of its own; then every tool: name, risk, effect, whether
it has a dry run and a rollback. With --json, one manifest per line (a tool's
as {"tool": …}). No agent is an empty result (a note on stderr unless --json),
not a failure.

${CONNECTION_HELP}

${EXIT_HELP}`;

export async function run(argv: string[]): Promise<number> {
  const { values } = parse(argv, { ...CONNECTION_FLAGS, json: { type: "boolean" } });
  if (values.help) {
    console.log(help);
    return 0;
  }
  const nc = await connectBus(connectionFrom(values, "observer", false));
  try {
    const directory = await AgentDirectory.open(nc, {
      onInvalid: (message) => console.error(`ignored an invalid announcement: ${message}`),
    });
    const roster = directory.roster().sort((a, b) => a.id.localeCompare(b.id));
    const tools = directory.tools().sort((a, b) => a.name.localeCompare(b.name));
    directory.close();
    if (roster.length === 0 && !values.json) console.error("no agents: no worker answered the roll call");
    for (const agent of roster) {
      if (values.json) console.log(JSON.stringify(agent));
      else
        console.log(
          `${agent.id.padEnd(32)} ${agent.agency.padEnd(12)} ${agent.priority.padEnd(10)} budget ${String(agent.token_budget).padStart(5)}  cooldown ${agent.cooldown_s}s${agent.triggers.length ? `  triggers ${agent.triggers.join(",")}` : ""}${agent.output_schema ? "  (own output schema)" : ""}`,
        );
    }
    for (const tool of tools) {
      if (values.json) console.log(JSON.stringify({ tool }));
      else
        console.log(
          `tool ${tool.name.padEnd(27)} ${tool.risk.padEnd(12)} ${tool.effect.padEnd(10)}${tool.dry_run ? "  dry run" : ""}${tool.rollback ? "  rollback" : ""}  ${tool.description}`,
        );
    }
    return EXIT.ok;
  } finally {
    await nc.close();
  }
}
