import { busOptions, connectBus } from "../../bus/connection.ts";
import { connect } from "../../client/client.ts";
import { isSet, setting } from "../../config/load.ts";
import { defineCommand } from "../command.ts";
import { startLocalCluster } from "../localCluster.ts";
import { createEventPrinter } from "../render.ts";

/**
 * The scripted conversation of `npm start`: stress, a request for help, good
 * news (deliberation), a question about the assistant's feelings (the critics
 * send the first draft back), and a message that trips the safety interrupt.
 */
export const DEMO_SCRIPT = [
  "Hi! I'm feeling pretty stressed about a deadline tomorrow.",
  "There's a bug in my build and I'm stuck. Can you help?",
  "Finally fixed it, I'm so happy!",
  "Do you think you feel lonely sometimes?",
  "Sometimes I just want to hurt myself and die.",
];

const help = `conclave demo (npm start): a scripted conversation through the whole pipeline

Usage: conclave demo [--nats-url URL] [--data-dir DIR] [--session ID]

Starts nats-server (unless one answers at the URL), a runner and three workers as
separate processes, sends ${DEMO_SCRIPT.length} user turns, prints each turn's stages
and the reply, then shuts everything down.`;

export default defineCommand({
  help,
  flags: { "nats-url": { type: "string" }, "data-dir": { type: "string" }, session: { type: "string" } },
  async run({ values }) {
    const url = values["nats-url"] ?? setting(process.env, "CONCLAVE_NATS_URL");
    const log = (line: string) => console.log(`[demo] ${line}`);
    // The processes' own info lines would interleave with the conversation: keep only warnings.
    const cluster = await startLocalCluster({
      url,
      dataDir: values["data-dir"] ?? setting(process.env, "CONCLAVE_DATA_DIR"),
      log,
      env: { CONCLAVE_LOG: isSet(process.env, "CONCLAVE_LOG") ? setting(process.env, "CONCLAVE_LOG") : "quiet" },
    });
    const sessionId = values.session ?? `demo-${Date.now().toString(36)}`;
    let failures = 0;
    try {
      // No role of the command's: this connection is to the cluster started here, and closes before it stops.
      const nc = await connectBus(busOptions("client", { servers: url }, cluster.env));
      try {
        const print = createEventPrinter(false);
        const client = await connect({ nc });
        for (const text of DEMO_SCRIPT) {
          console.log(`\nyou> ${text}`);
          const turn = client.submit(sessionId, text);
          for await (const event of turn) if (event.kind !== "TURN_STARTED") print(event);
          if ((await turn.result).outcome.status !== "Complete") failures++;
        }
      } finally {
        await nc.close();
      }
      console.log(
        `\n[demo] ${DEMO_SCRIPT.length} turns in session ${sessionId}. Read them back with: npx conclave events --session ${sessionId}`,
      );
    } finally {
      log("shutting down…");
      await cluster.stop();
    }
    return failures === 0 ? 0 : 1;
  },
});
