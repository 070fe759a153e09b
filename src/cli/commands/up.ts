import { DEFAULT_NATS_URL } from "../../bus/connection.ts";
import { parse, untilInterrupted } from "../args.ts";
import { DEFAULT_LAYOUT, startLocalCluster } from "../localCluster.ts";

export const help = `conclave up: start nats-server, a runner and the workers, until interrupted

Usage: conclave up [--nats-url URL] [--data-dir DIR]

  --nats-url URL   where NATS is, or where to start it (loopback only)  [$CONCLAVE_NATS_URL, ${DEFAULT_NATS_URL}]
  --data-dir DIR   JetStream data when conclave starts nats-server     [$CONCLAVE_DATA_DIR, .conclave]

Starts, each as its own process:
${DEFAULT_LAYOUT.map(({ name, args }) => `  ${name.padEnd(42)} conclave ${args.join(" ")}`).join("\n")}
nats-server is started with nats.conf unless a server already answers at the URL.
Ctrl-C stops everything: the runner first (it finishes running turns), then the workers.`;

export async function run(argv: string[]): Promise<number> {
  const { values } = parse(argv, {
    "nats-url": { type: "string" },
    "data-dir": { type: "string" },
    help: { type: "boolean", short: "h" },
  });
  if (values.help) {
    console.log(help);
    return 0;
  }
  const log = (line: string) => console.log(`[up] ${line}`);
  const cluster = await startLocalCluster({
    url: values["nats-url"] ?? process.env.CONCLAVE_NATS_URL ?? DEFAULT_NATS_URL,
    dataDir: values["data-dir"] ?? process.env.CONCLAVE_DATA_DIR ?? ".conclave",
    log,
  });
  log(`Conclave is up on ${cluster.url}. Try: npx conclave send --session demo "hello"   (Ctrl-C to stop)`);
  for (const p of cluster.processes) {
    p.child.once("exit", (code, signal) => {
      if (!stopping) log(`${p.name} exited unexpectedly (${signal ?? `code ${code}`})`);
    });
  }
  let stopping = false;
  await untilInterrupted();
  stopping = true;
  log("stopping…");
  await cluster.stop();
  log("stopped");
  return 0;
}
