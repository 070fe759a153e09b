import { join, resolve } from "node:path";
import { AuthorizationError } from "@nats-io/nats-core";
import { busOptions, connectBus, isProduction } from "../bus/connection.ts";
import { ConclaveError } from "../errors.ts";
import { describeLlm, llmConfigFromEnv } from "../llm/config.ts";
import { type RunningNatsCluster, startNatsCluster } from "../nats/cluster.ts";
import { type RunningNatsServer, startNatsServer } from "../nats/server.ts";
import { type ConclaveProcess, spawnConclave } from "./childProcess.ts";
import { UnavailableError } from "./failures.ts";
import { type SupervisedProcess, supervise } from "./supervisor.ts";

/**
 * The processes `conclave up` starts, besides nats-server, with the offline model: three workers and
 * one runner that hosts the scheduler, council and critics itself (`--cognition runner`: four hops
 * fewer a turn); the third worker serves memory and knowledge (collections: `conclave knowledge add`).
 */
export const DEFAULT_LAYOUT: { name: string; args: string[] }[] = [
  {
    name: "worker[inhibition,monitoring,reasoning]",
    args: ["worker", "--agents", "inhibition.*,monitoring.*,reasoning.*"],
  },
  { name: "worker[emotion,social,planning]", args: ["worker", "--agents", "emotion.*,social.*,planning.*"] },
  { name: "worker[memory,knowledge]", args: ["worker", "--services", "memory,knowledge"] },
  { name: "runner", args: ["runner", "--cognition", "runner"] },
];

/**
 * In LLM mode the scheduler, council and critics stay on a worker: a model call under way there
 * survives the runner's death (a takeover joins it), where one made in the runner would be made
 * again; against a model's latency the hops they save are noise.
 */
export const LLM_LAYOUT: { name: string; args: string[] }[] = [
  ...DEFAULT_LAYOUT.slice(0, 2),
  {
    name: "worker[scheduler,council,critics,memory,knowledge]",
    args: ["worker", "--services", "scheduler,council,critics,memory,knowledge"],
  },
  { name: "runner", args: ["runner"] },
];

/**
 * The layout `conclave up` starts in this environment: LLM_LAYOUT when a model is configured (an
 * API key or a base URL: see llmConfigFromEnv, whose LlmConfigError a half-set configuration throws).
 */
export const layoutFor = (env: NodeJS.ProcessEnv = process.env) =>
  llmConfigFromEnv(env) ? LLM_LAYOUT : DEFAULT_LAYOUT;

export interface LocalClusterOptions {
  url: string;
  /** Where nats-server keeps JetStream data when we start it. Default: ./.conclave */
  dataDir: string;
  log: (line: string) => void;
  /** Extra environment for the child processes (credentials and TLS settings go here, never in argv). */
  env?: NodeJS.ProcessEnv;
  /** Starts the runner and workers with `--inspect`. */
  inspect?: boolean;
  /** More agents, in one more worker: `conclave worker --agents` items (built-in patterns, module paths). */
  agents?: string;
  /** Tools, in that worker: `conclave worker --tools` items (`builtin`, module paths). */
  tools?: string;
  /**
   * Start a cluster of this many nats-server nodes instead of one (`conclave up --cluster 3`):
   * client ports from the URL's on (4222, 4223, 4224), route ports 2000 above them, stores in
   * `<dataDir>/nats-cluster/<node>`. The processes get every node's URL and CONCLAVE_REPLICAS set
   * to the node count.
   */
  clusterNodes?: number;
  /**
   * Also start the gateway (`conclave serve`, supervised like the others) on 127.0.0.1, on this port
   * (default 7430); its other settings come from the environment (CONCLAVE_GATEWAY_TOKEN,
   * CONCLAVE_GATEWAY_PRINCIPALS, the CONCLAVE_GATEWAY_* bounds).
   */
  serve?: { port?: number };
  /** How long each process may take to serve once started (default: spawnConclave's, 20 s). */
  readyTimeoutMs?: number;
  /**
   * Also start the viewer (`conclave viewer`, supervised like the others) on 127.0.0.1, on this port
   * (default 7420), its conversation panel talking to this AG-UI endpoint (`--gateway`).
   */
  viewer?: { port?: number; gateway?: string };
}

export interface LocalCluster {
  url: string;
  /** Null when a server was already running at the URL, or with `clusterNodes`. */
  server: RunningNatsServer | null;
  /** The nodes started with `clusterNodes`, else null. */
  natsCluster: RunningNatsCluster | null;
  processes: SupervisedProcess[];
  /** The environment the children run with: what a process joining them (conclave demo's client, up --exec) takes. */
  env: NodeJS.ProcessEnv;
  /**
   * Puts `next` in the place of the process of the same name (conclave dev's reloaded agents
   * worker), then stops the one it replaces; `stop` stops `next` from then on.
   */
  replace(next: SupervisedProcess): Promise<void>;
  stop(): Promise<void>;
}

/** The name of the worker hosting `--agents` and `--tools` (its log lines: `worker[your agents] ready (pid N)`). */
export const AGENTS_WORKER = "worker[your agents]";

/** `conclave worker`'s arguments for the worker hosting `--agents` and `--tools`, or none without either. */
export const agentsWorkerArgs = ({ agents, tools }: { agents?: string; tools?: string }): string[] =>
  agents || tools ? ["worker", ...(agents ? ["--agents", agents] : []), ...(tools ? ["--tools", tools] : [])] : [];

/**
 * Whether a server answers at `url`, connecting as the children will (their
 * environment: credentials and TLS). A refusal of our own settings (an unknown
 * CONCLAVE_ENV, an unreadable seed file, production without credentials) or of
 * the credentials by the server is thrown, not taken for "no server".
 */
async function reachable(url: string, env: NodeJS.ProcessEnv): Promise<boolean> {
  const options = busOptions("observer", { servers: url, persistent: false }, env);
  try {
    const nc = await connectBus(options);
    await nc.close();
    return true;
  } catch (error) {
    if (error instanceof ConclaveError || error instanceof AuthorizationError) throw error;
    return false;
  }
}

/**
 * Starts nats-server (unless one answers at `url`), then the runner and the
 * workers as separate processes, and waits until each one serves.
 */
export async function startLocalCluster(options: LocalClusterOptions): Promise<LocalCluster> {
  let server: RunningNatsServer | null = null;
  let natsCluster: RunningNatsCluster | null = null;
  const env: NodeJS.ProcessEnv = { ...process.env, ...options.env, CONCLAVE_NATS_URL: options.url };
  // Before anything starts: a half-set LLM configuration stops here, in one line.
  options.log(`model: ${describeLlm(llmConfigFromEnv(env))}`);
  const clustered = options.clusterNodes !== undefined;
  if (await reachable(options.url, env)) {
    if (clustered) {
      throw new UnavailableError(
        `a NATS server already answers at ${options.url}; conclave up --cluster starts its own nodes there: stop it, or run conclave up without --cluster`,
      );
    }
    options.log(`using the NATS server at ${options.url}`);
  } else {
    if (isProduction(env)) {
      // The server conclave starts runs the repo's nats.conf: development passwords, no TLS.
      throw new UnavailableError(
        `CONCLAVE_ENV=production: no NATS server answers at ${options.url}; conclave up starts one only in development (run yours, e.g. with deploy/nats.production.conf)`,
      );
    }
    const parsed = new URL(
      options.url
        .split(",")[0]!
        .trim()
        .replace(/^nats:/, "http:"),
    );
    if (!["127.0.0.1", "localhost", "[::1]"].includes(parsed.hostname)) {
      throw new UnavailableError(
        `no NATS server answers at ${options.url}, and conclave only starts one on this machine`,
      );
    }
    const port = Number(parsed.port || 4222);
    if (options.clusterNodes !== undefined) {
      natsCluster = await startClusterNodes(options.clusterNodes, port, options.dataDir);
      options.log(
        `started a ${natsCluster.nodes.length}-node NATS cluster: ${natsCluster.nodes.map((node) => `${node.name} ${node.url}`).join(", ")} (JetStream stores in ${natsCluster.storeRoot})`,
      );
      env.CONCLAVE_NATS_URL = natsCluster.url;
      env.CONCLAVE_REPLICAS = String(natsCluster.nodes.length);
      env.CONCLAVE_NATS_MONITOR = natsCluster.monitorUrl;
      options.log(`monitoring endpoints: ${natsCluster.monitorUrl} (conclave status reads the meta leader there)`);
    } else {
      server = await startNatsServer({ port, storeDir: join(resolve(options.dataDir), "nats"), detached: true });
      options.log(`started nats-server on ${server.url} (JetStream store ${server.storeDir})`);
    }
    // The server started here runs the repo's nats.conf: the nats CLI's creds (NATS_CREDS), meant for another server, would be refused.
    delete env.NATS_CREDS;
  }
  const supervision = {
    log: options.log,
    ...(options.readyTimeoutMs !== undefined ? { spawn: readyWithin(options.readyTimeoutMs) } : {}),
  };
  const extra = agentsWorkerArgs(options);
  const layout = extra.length > 0 ? [{ name: AGENTS_WORKER, args: extra }, ...layoutFor(env)] : layoutFor(env);
  const processes = layout.map(({ name, args }) =>
    supervise(name, options.inspect ? [...args, "--inspect"] : args, env, supervision),
  );
  if (options.serve) processes.push(supervise(SERVE, serveArgs(options.serve), env, supervision));
  const stopAll = async () => {
    // The gateway and viewer first (no new turns come in), then the runner, so no turn is left without its workers.
    const order = [SERVE, VIEWER, "runner"];
    for (const first of order) await Promise.all(processes.filter((p) => p.name === first).map((p) => p.stop()));
    await Promise.all(processes.filter((p) => !order.includes(p.name)).map((p) => p.stop()));
    await server?.stop();
    await natsCluster?.stop();
  };
  const replace = async (next: SupervisedProcess) => {
    const index = processes.findIndex((p) => p.name === next.name);
    const previous = index >= 0 ? processes.splice(index, 1, next)[0] : undefined;
    if (index < 0) processes.push(next);
    await previous?.stop();
  };
  try {
    await Promise.all(processes.map((p) => p.current.ready));
    // The viewer once the runner has made the streams it reads.
    if (options.viewer) {
      processes.push(supervise(VIEWER, viewerArgs(options.viewer), env, supervision));
      await processes.at(-1)!.current.ready;
    }
  } catch (error) {
    await stopAll();
    throw error;
  }
  for (const p of processes) options.log(`${p.name} ready (pid ${p.current.child.pid})`);
  return { url: env.CONCLAVE_NATS_URL ?? options.url, server, natsCluster, processes, env, replace, stop: stopAll };
}

/** Starts a `conclave` process given `readyTimeoutMs` to serve: a supervisor's `spawn`. */
export const readyWithin =
  (readyTimeoutMs: number) =>
  (name: string, args: string[], env: NodeJS.ProcessEnv): ConclaveProcess =>
    spawnConclave(name, args, env, readyTimeoutMs);

/** The gateway's name among `conclave up`'s processes (its log lines: `serve ready (pid N)`, `serve restarted`). */
const SERVE = "serve";

/** The viewer's name among `conclave dev`'s processes. */
const VIEWER = "viewer";

/** `conclave serve`'s arguments under `conclave up --serve`. */
const serveArgs = ({ port }: { port?: number }): string[] => [
  "serve",
  ...(port !== undefined ? ["--port", String(port)] : []),
];

/** `conclave viewer`'s arguments under `conclave dev`. */
const viewerArgs = ({ port, gateway }: { port?: number; gateway?: string }): string[] => [
  "viewer",
  ...(port !== undefined ? ["--port", String(port)] : []),
  ...(gateway !== undefined ? ["--gateway", gateway] : []),
];

/** Most nodes `conclave up --cluster` starts: JetStream keeps at most five replicas. */
export const MAX_CLUSTER_NODES = 5;

/**
 * The nodes of `conclave up --cluster N`: client ports `port`…`port+N-1`, route ports 2000 above,
 * HTTP monitoring 4000 above (loopback), stores kept in the data directory.
 */
function startClusterNodes(count: number, port: number, dataDir: string): Promise<RunningNatsCluster> {
  const ports = Array.from({ length: count }, (_, index) => port + index);
  return startNatsCluster({
    nodes: count,
    ports,
    routePorts: ports.map((clientPort) => clientPort + 2_000),
    monitorPorts: ports.map((clientPort) => clientPort + 4_000),
    storeRoot: join(resolve(dataDir), "nats-cluster"),
  });
}
