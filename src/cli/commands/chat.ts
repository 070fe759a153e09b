import { randomBytes } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { ChatController } from "../../chat/controller.ts";
import { connect } from "../../client/index.ts";
import { importOptional } from "../../optionalPackages.ts";
import { sessionArg, UsageError } from "../args.ts";
import { type CommandInput, defineCommand } from "../command.ts";
import { EXIT } from "../failures.ts";

const help = `conclave chat: talk with Conclave in the terminal, watching each turn run

Usage: conclave chat [--session <id>] [options]

  --session ID   session to talk in (A-Z a-z 0-9 _ -, up to 64 characters)   [a fresh one]

Shows, live, the stage in progress, the agents of each wave (✓ answered, ✗ failed),
the deliberation rounds and their consensus, the council's decision, the voice's
thinking and reply as they stream, the critics' verdicts and the warnings, above
an input line and under the conversation so far.

Keys: Enter sends the line · Backspace erases · Ctrl-U clears the line
      Ctrl-C cancels the running turn; a second Ctrl-C (or one when no turn runs) quits

Needs a terminal (stdin and stdout a TTY); from a script, use conclave send.`;

const FLAGS = { session: { type: "string", short: "s" } } as const;

export default defineCommand({ help, flags: FLAGS, role: "client", run });

/** How long quitting waits for a cancelled turn's stream to end. */
const CANCEL_GRACE_MS = 3_000;

/** A session id no one used yet: `chat-` and 12 hex digits. */
const freshSession = () => `chat-${randomBytes(6).toString("hex")}`;

async function run({ values, bus }: CommandInput<typeof FLAGS>): Promise<number> {
  const session = values.session === undefined ? freshSession() : sessionArg(values.session);
  // First: without ink and react (optional packages), say so, whatever the terminal.
  const showChat = await liveRenderer();
  if (!process.stdin.isTTY || !process.stdout.isTTY)
    throw new UsageError("chat needs a terminal (stdin and stdout a TTY); from a script, use conclave send");

  const client = await connect({ nc: await bus() });
  let screen: ReturnType<typeof showChat> | undefined;
  const controller = new ChatController(client, session, () => screen?.quit());
  // A session named on the command line may have a conversation already: show it first.
  if (values.session !== undefined) await controller.restore();
  screen = showChat(controller);
  // Ctrl-C arrives as a key; a signal from elsewhere means the same (SIGINT) or quit (SIGTERM, SIGHUP).
  const interrupt = () => controller.dispatch({ type: "interrupted" });
  const quit = () => controller.dispatch({ type: "quit" });
  process.on("SIGINT", interrupt);
  process.on("SIGTERM", quit);
  process.on("SIGHUP", quit);
  try {
    await screen.exited;
    // A turn cancelled on the way out has a moment to deliver its cancellation.
    await Promise.race([controller.settled(), sleep(CANCEL_GRACE_MS)]);
  } finally {
    process.off("SIGINT", interrupt);
    process.off("SIGTERM", quit);
    process.off("SIGHUP", quit);
    await client.close(); // leaves the bus, which it was given, open (defineCommand closes it)
  }
  return EXIT.ok;
}

/**
 * The ink app, loaded so that it draws live: ink believes it runs in CI when the environment says
 * so (CI, CONTINUOUS_INTEGRATION, CI_*; read once, when ink loads) and then draws only the last
 * frame. The chat runs in a terminal (checked above), so those variables do not apply to it.
 */
async function liveRenderer() {
  for (const name of Object.keys(process.env))
    if (name === "CI" || name === "CONTINUOUS_INTEGRATION" || name.startsWith("CI_")) delete process.env[name];
  return (await importOptional("the terminal UI", ["ink", "react"], () => import("../../chat/app.ts"))).showChat;
}
