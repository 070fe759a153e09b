import { AuthorizationError } from "@nats-io/nats-core";
import { InsecureCredentialsError } from "../bus/connection.ts";
import { RemoteCallError } from "../bus/errors.ts";
import { LlmConfigError } from "../llm/index.ts";
import { NatsServerNotFoundError } from "../nats/server.ts";
import { UnknownAgentError } from "../workers/worker.ts";
import { UsageError } from "./args.ts";
import * as demo from "./commands/demo.ts";
import * as events from "./commands/events.ts";
import * as graph from "./commands/graph.ts";
import * as inspect from "./commands/inspect.ts";
import * as replay from "./commands/replay.ts";
import * as runner from "./commands/runner.ts";
import * as schemas from "./commands/schemas.ts";
import * as send from "./commands/send.ts";
import * as turns from "./commands/turns.ts";
import * as up from "./commands/up.ts";
import * as viewer from "./commands/viewer.ts";
import * as worker from "./commands/worker.ts";

interface Command {
  help: string;
  run(argv: string[]): Promise<number>;
}

const COMMANDS: Record<string, Command> = {
  up,
  demo,
  runner,
  worker,
  send,
  events,
  schemas,
  graph,
  inspect,
  viewer,
  turns,
  replay,
};

const HELP = `conclave: an actor-model multi-agent runtime on XState and NATS

Usage: conclave <command> [options]     (conclave <command> --help for more)

Commands:
  up        start nats-server, a runner and the workers, until interrupted
  demo      run a scripted conversation through the whole pipeline (npm start)
  runner    host session and turn actors
  worker    host agents and/or the scheduler, council, critics and memory
  send      publish a user turn and stream its events
  events    read a session's event log back
  turns     where each turn of a session stands (pending, inflight, done, failed, expired)
  replay    rebuild a session's state from its event log and check it
  schemas   write the JSON Schemas of the wire messages
  graph     draw a statechart as Mermaid, DOT or JSON
  viewer    watch the statecharts light up as turns run, in a browser (offline)
  inspect   relay every process's actors to the Stately inspector (needs internet)`;

async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === "--help" || name === "-h" || name === "help") {
    console.log(HELP);
    return name ? 0 : 2;
  }
  const command = COMMANDS[name];
  if (!command) {
    console.error(`conclave: unknown command '${name}'\n\n${HELP}`);
    return 2;
  }
  try {
    return await command.run(rest);
  } catch (error) {
    if (error instanceof UsageError) {
      console.error(`conclave ${name}: ${error.message}\n\n${command.help}`);
      return 2;
    }
    if (error instanceof RemoteCallError) {
      const hint = error.code === "no_responders" ? " (is a runner up? start one with `npx conclave up`)" : "";
      console.error(`conclave ${name}: ${error.code}: ${error.message}${hint}`);
      for (const issue of error.issues ?? []) console.error(`  - ${issue}`);
      return 2;
    }
    if (
      error instanceof NatsServerNotFoundError ||
      error instanceof InsecureCredentialsError ||
      error instanceof AuthorizationError ||
      error instanceof UnknownAgentError ||
      error instanceof LlmConfigError
    ) {
      console.error(`conclave ${name}: ${error.message}`);
      return 2;
    }
    const message = error instanceof Error ? error.message : String(error);
    if (/CONNECTION_REFUSED|ECONNREFUSED|connection refused/i.test(message)) {
      console.error(`conclave ${name}: cannot reach NATS (${message}). Is it running? \`npx conclave up\` starts one.`);
      return 1;
    }
    console.error(`conclave ${name}: ${error instanceof Error ? (error.stack ?? message) : message}`);
    return 1;
  }
}

// Exit once the command has shut down in order: idle keep-alive sockets (e.g. the
// LLM client's) must not keep a stopped worker alive.
process.exit(await main(process.argv.slice(2)));
