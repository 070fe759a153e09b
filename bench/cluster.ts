import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import type { NatsConnection } from "@nats-io/nats-core";
import { busOptions, connectBus } from "../src/bus/connection.ts";
import { type ConclaveProcess, spawnConclave } from "../src/cli/childProcess.ts";
import { layoutFor } from "../src/cli/localCluster.ts";
import { DEFAULT_NATS_CONFIG, startNatsServer } from "../src/nats/server.ts";
import { type LogLineListener, spawnLogged } from "./loggedProcess.ts";

const HOOKS = pathToFileURL(join(import.meta.dirname, "processHooks.mjs")).href;

/** `env` with the bench hooks preloaded (bench/processHooks.mjs): the process then answers {@link controlProcess}. */
export const withBenchHooks = (env: NodeJS.ProcessEnv): NodeJS.ProcessEnv => ({
  ...env,
  NODE_OPTIONS: [env.NODE_OPTIONS, `--import=${HOOKS}`].filter(Boolean).join(" "),
});

export interface BenchProcess {
  name: string;
  pid: number;
}

/** What the preloaded hooks answer (see processHooks.mjs). */
export interface HookReply {
  now?: number;
  memory?: NodeJS.MemoryUsage;
  path?: string;
  error?: string;
}

/** A local nats-server (free port, temporary store) with a runner and workers, each its own process. */
export interface BenchCluster {
  url: string;
  /** A connection for the bench's own instruments (the wiretap, the floor): the bench user, no restrictions. */
  connectInstrument(name: string): Promise<NatsConnection>;
  processes: ConclaveProcess[];
  runner: ConclaveProcess;
  /** Every process of the deployment (nats-server included), for memory readings. */
  pids(): BenchProcess[];
  /** Asks a process's bench hooks to do something and waits for the answer. */
  control(process: ConclaveProcess, message: Record<string, unknown>, timeoutMs?: number): Promise<HookReply>;
  /** How far a process's event clock (timeOrigin + now) is ahead of this one's, in ms. */
  clockOffset(process: ConclaveProcess): Promise<number>;
  /** Starts one more process (e.g. a second runner) with the deployment's environment; `stop` stops it too. */
  spawn(name: string, args: string[]): Promise<ConclaveProcess>;
  stop(): Promise<void>;
}

export interface ClusterOptions {
  /** Extra environment for the runner and workers (e.g. a model endpoint for a latency scenario). */
  env?: NodeJS.ProcessEnv;
  /** Extra environment for one process, by its name in the layout (e.g. its OTEL_SERVICE_NAME). */
  processEnv?: (name: string) => NodeJS.ProcessEnv;
  /** Reads every process's stderr, line by line (e.g. to count the runner's warnings); it still reaches the bench's stderr. */
  onLogLine?: LogLineListener;
}

let nextId = 0;

const BENCH_USER = "conclave-bench";

/**
 * The repo's nats.conf with one more user in the CONCLAVE account, for the
 * bench's instruments only: it may subscribe to everything (the wiretap) and
 * use its own subjects and stream (the floor). Every Conclave process keeps
 * its role and that role's permissions.
 */
function benchConfig(password: string): { path: string; remove: () => void } {
  const config = readFileSync(DEFAULT_NATS_CONFIG, "utf8");
  const account = config.indexOf("CONCLAVE {");
  const users = config.indexOf("users: [", account);
  if (account < 0 || users < 0) throw new Error(`cannot find the CONCLAVE account's users in ${DEFAULT_NATS_CONFIG}`);
  const at = users + "users: [".length;
  const withBench = `${config.slice(0, at)}\n      { user: "${BENCH_USER}", password: "${password}" }${config.slice(at)}`;
  const directory = mkdtempSync(join(tmpdir(), "conclave-bench-conf-"));
  const path = join(directory, "nats.conf");
  writeFileSync(path, withBench);
  return { path, remove: () => rmSync(directory, { recursive: true, force: true }) };
}

/** Asks a process's bench hooks (see {@link withBenchHooks}) to do something and waits for the answer. */
export function controlProcess(
  target: ConclaveProcess,
  message: Record<string, unknown>,
  timeoutMs = 30_000,
): Promise<HookReply> {
  return new Promise<HookReply>((resolve, reject) => {
    const id = ++nextId;
    const timer = setTimeout(() => {
      target.child.off("message", onMessage);
      reject(new Error(`${target.name} did not answer ${String(message.bench)} within ${timeoutMs} ms`));
    }, timeoutMs);
    const onMessage = (reply: { bench?: string; id?: number } & HookReply) => {
      if (reply?.bench !== "reply" || reply.id !== id) return;
      clearTimeout(timer);
      target.child.off("message", onMessage);
      if (reply.error) reject(new Error(`${target.name}: ${reply.error}`));
      else resolve(reply);
    };
    target.child.on("message", onMessage);
    target.child.send({ ...message, id });
  });
}

export async function startBenchCluster(options: ClusterOptions = {}): Promise<BenchCluster> {
  const password = randomBytes(12).toString("hex");
  const config = benchConfig(password);
  const server = await startNatsServer({ config: config.path }).finally(config.remove);
  // Should the bench itself crash, the server must not outlive it.
  const killServer = () => server.process.kill("SIGKILL");
  process.once("exit", killServer);
  const env = withBenchHooks({ ...process.env, ...options.env, CONCLAVE_NATS_URL: server.url, CONCLAVE_LOG: "quiet" });
  const envOf = (name: string) => (options.processEnv ? { ...env, ...options.processEnv(name) } : env);
  const start = (name: string, args: string[]) =>
    options.onLogLine
      ? spawnLogged(name, args, envOf(name), options.onLogLine)
      : spawnConclave(name, args, envOf(name));
  const processes = layoutFor(env).map(({ name, args }) => start(name, args));
  const stop = async () => {
    await Promise.all(processes.filter((p) => p.name === "runner").map((p) => p.stop()));
    await Promise.all(processes.filter((p) => p.name !== "runner").map((p) => p.stop()));
    await server.stop();
    process.removeListener("exit", killServer);
  };
  try {
    await Promise.all(processes.map((p) => p.ready));
  } catch (error) {
    await stop();
    throw error;
  }
  const runner = processes.find((p) => p.name === "runner");
  if (!runner) throw new Error("the layout has no runner");
  const control = controlProcess;
  // NTP-style over IPC: the sample with the shortest round trip bounds the error by half of it.
  const clockOffset = async (target: ConclaveProcess) => {
    let best = { rtt: Number.POSITIVE_INFINITY, offset: 0 };
    for (let i = 0; i < 30; i++) {
      const sent = performance.timeOrigin + performance.now();
      const { now } = await control(target, { bench: "clock" });
      const received = performance.timeOrigin + performance.now();
      if (received - sent < best.rtt) best = { rtt: received - sent, offset: (now ?? sent) - (sent + received) / 2 };
    }
    return best.offset;
  };
  return {
    url: server.url,
    connectInstrument: (name) =>
      connectBus(
        busOptions("observer", { servers: server.url, user: BENCH_USER, password, inboxPrefix: "_INBOX", name }),
      ),
    processes,
    runner,
    pids: () => [
      ...processes.map((p) => ({ name: p.name, pid: p.child.pid ?? -1 })),
      { name: "nats-server", pid: server.process.pid ?? -1 },
    ],
    control,
    clockOffset,
    spawn: async (name, args) => {
      const added = start(name, args);
      processes.push(added);
      await added.ready;
      return added;
    },
    stop,
  };
}
