import type { NatsConnection } from "@nats-io/nats-core";
import { AgentRoster } from "../../agents/announcement.ts";
import { AgentDirectory } from "../../agents/directory.ts";
import { RemoteCallError } from "../../bus/errors.ts";
import { requestJson } from "../../bus/request.ts";
import { subjects } from "../../bus/subjects.ts";
import { printable } from "../../client/printable.ts";
import type { AgentManifest } from "../../contracts/agent.ts";
import type { ToolManifest } from "../../contracts/tool.ts";
import { defineCommand } from "../command.ts";
import { EXIT } from "../failures.ts";

const help = `conclave agents: the agents and tools live workers host

Usage: conclave agents [--json]

Asks a runner for the roster its turns are planned with (conclave.agents.roster):
every agent live workers announced and its directory has not forgotten (an agent
whose worker went silent is listed until it expires, three heartbeats on), and
lists each: id, agency, priority, triggers, cooldown, token budget, and whether it
has an output schema of its own; then every tool: name, risk, effect, whether it
has a dry run and a rollback. With no runner answering, it calls the workers' roll
(conclave.agents.rollcall) instead and lists what they announce. Which of the two
the list comes from is said on stderr (unless --json). With --json, one manifest
per line (a tool's as {"tool": …}). No agent is an empty result (a note on stderr
unless --json), not a failure.`;

export default defineCommand({
  help,
  flags: { json: { type: "boolean" } },
  role: "observer",
  async run({ values, bus }) {
    const listed = await rosterOf(await bus());
    const roster = listed.agents.sort((a, b) => a.id.localeCompare(b.id));
    const tools = listed.tools.sort((a, b) => a.name.localeCompare(b.name));
    if (!values.json) console.error(printable(listed.source, { newlines: false }));
    if (roster.length === 0 && !values.json) console.error(`no agents: ${listed.none}`);
    for (const agent of roster) {
      if (values.json) console.log(JSON.stringify(agent));
      else
        console.log(
          printable(
            `${agent.id.padEnd(32)} ${agent.agency.padEnd(12)} ${agent.priority.padEnd(10)} budget ${String(agent.token_budget).padStart(5)}  cooldown ${agent.cooldown_s}s${agent.triggers.length ? `  triggers ${agent.triggers.join(",")}` : ""}${agent.output_schema ? "  (own output schema)" : ""}`,
            { newlines: false },
          ),
        );
    }
    for (const tool of tools) {
      if (values.json) console.log(JSON.stringify({ tool }));
      else
        console.log(
          printable(
            `tool ${tool.name.padEnd(27)} ${tool.risk.padEnd(12)} ${tool.effect.padEnd(10)}${tool.dry_run ? "  dry run" : ""}${tool.rollback ? "  rollback" : ""}  ${tool.description}`,
            { newlines: false },
          ),
        );
    }
    return EXIT.ok;
  },
});

/** How long a runner has to send its roster before the workers' roll is called instead. */
const ROSTER_TIMEOUT_MS = 3_000;

interface Listed {
  agents: AgentManifest[];
  tools: ToolManifest[];
  /** Where the list comes from, for stderr. */
  source: string;
  /** Why it is empty, when it is. */
  none: string;
}

/**
 * The roster a runner plans with, asked of any runner; when none answers
 * (or its answer is not a roster), what live workers announce to a roll call.
 */
async function rosterOf(nc: NatsConnection): Promise<Listed> {
  let unanswered: string;
  try {
    const roster = await requestJson(nc, subjects.agentsRoster, {}, AgentRoster, { timeoutMs: ROSTER_TIMEOUT_MS });
    return {
      agents: roster.agents,
      tools: roster.tools,
      source: `roster: runner ${roster.runner}'s, what its turns are planned with (${subjects.agentsRoster})`,
      none: "the runner knows of no live worker",
    };
  } catch (error) {
    if (!(error instanceof RemoteCallError)) throw error;
    unanswered = error.code === "no_responders" ? "no runner is up" : `no runner answered: ${error.message}`;
  }
  const directory = await AgentDirectory.open(nc, {
    onInvalid: (message) => console.error(printable(`ignored an invalid announcement: ${message}`)),
  });
  try {
    return {
      agents: directory.roster(),
      tools: directory.tools(),
      source: `roster: the workers' answers to a roll call (${subjects.agentsRollcall}); ${unanswered}`,
      none: "no worker answered the roll call",
    };
  } finally {
    directory.close();
  }
}
