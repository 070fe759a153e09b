/**
 * A NATS cluster on this machine: N nats-server processes on loopback, each
 * with its own JetStream store and server name, routed to one another, with
 * the repo's nats.conf (its accounts, users and permissions). What `conclave
 * up --cluster 3` runs and what the cluster tests kill and restart; three real
 * hosts are configured as docs/operations.md shows ("A three-node cluster").
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { withDeadline } from "../deadline.ts";
import { DEFAULT_NATS_CONFIG, findNatsServer, freePort, NatsServerNotFoundError } from "./server.ts";

/** The line every node logs once it knows who leads JetStream's meta group, or leads it (nats-server 2.9+). */
const META_LEADER = /JetStream cluster new metadata leader|Self is new JetStream cluster metadata leader/;
/** Node output kept for an error message: the tail only, so a long-running node does not grow without bound. */
const KEPT_OUTPUT = 16_384;

export interface NatsClusterOptions {
  /** How many nodes. Default 3 (a quorum survives one node down). */
  nodes?: number;
  /** The cluster's name (`--cluster_name`). Default `conclave`. */
  name?: string;
  /** Config file of every node. Default: the repo's nats.conf. Its `listen` is overridden by each node's port. */
  config?: string;
  /** Client ports, one per node. Default: free ones. */
  ports?: number[];
  /** Route (cluster) ports, one per node. Default: free ones. */
  routePorts?: number[];
  /**
   * HTTP monitoring ports, one per node, on the node's address: `/jsz` names the JetStream meta
   * leader, which no user of a Conclave account may ask NATS for (`conclave status --monitor`).
   * Default: free ones; `false`: no monitoring port.
   */
  monitorPorts?: number[] | false;
  /**
   * The address each node listens on and is routed at, one per node. Default: 127.0.0.1 for all.
   * Other addresses are for nodes in their own network namespace (test/helpers/netns.ts).
   */
  hosts?: string[];
  /**
   * A command that runs each node's nats-server, by node index: e.g. `["ip", "netns", "exec",
   * "ns1"]` (the server's path and arguments follow). Default: nats-server itself.
   */
  launcher?: (index: number) => string[];
  /** Where the nodes keep JetStream: node `<name>` in `<storeRoot>/<name>`. Default: a temporary directory, removed on stop. */
  storeRoot?: string;
  /** Environment of nats-server. Default: this process's. */
  env?: NodeJS.ProcessEnv;
  /** How long to wait for the cluster to form and elect a JetStream meta leader. Default 20 s. */
  readyTimeoutMs?: number;
}

/** One node of a running cluster; it may be killed and started again (same ports, same store). */
export interface NatsClusterNode {
  /** Its server name (`n1`, `n2`…), as stream info's `cluster.replicas` names it. */
  readonly name: string;
  readonly url: string;
  readonly port: number;
  readonly routePort: number;
  /** Its HTTP monitoring endpoint (`http://host:port`), or undefined without one. */
  readonly monitorUrl: string | undefined;
  readonly storeDir: string;
  /** The running process, or null while it is down. */
  readonly process: ChildProcess | null;
  /** Kills the node (SIGKILL by default: a crash) and resolves once it has exited. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** Starts it again after a kill, and resolves once it is back in the cluster (it knows the meta leader). */
  start(): Promise<void>;
}

export interface RunningNatsCluster {
  readonly name: string;
  readonly nodes: readonly NatsClusterNode[];
  /** Every node's client URL. */
  readonly urls: readonly string[];
  /** The URLs comma-separated, as CONCLAVE_NATS_URL takes them. */
  readonly url: string;
  /** Every node's monitoring endpoint, comma-separated (what `conclave status --monitor` takes); empty without them. */
  readonly monitorUrl: string;
  readonly storeRoot: string;
  /** Stops every node (SIGTERM, then SIGKILL) and removes a temporary store. */
  stop(): Promise<void>;
}

/**
 * Starts a cluster of nats-server nodes on loopback and resolves once every
 * node has joined it and JetStream has a meta leader.
 */
export async function startNatsCluster(options: NatsClusterOptions = {}): Promise<RunningNatsCluster> {
  const binary = findNatsServer();
  if (!binary) throw new NatsServerNotFoundError();
  const count = options.nodes ?? 3;
  if (!Number.isInteger(count) || count < 1) throw new RangeError(`a cluster needs at least one node, not ${count}`);
  const clusterName = options.name ?? "conclave";
  const ports = options.ports ?? (await freePorts(count));
  const routePorts = options.routePorts ?? (await freePorts(count, ports));
  const monitorPorts =
    options.monitorPorts === false ? [] : (options.monitorPorts ?? (await freePorts(count, [...ports, ...routePorts])));
  const hosts = options.hosts ?? ports.map(() => "127.0.0.1");
  if (ports.length !== count || routePorts.length !== count || hosts.length !== count) {
    throw new RangeError(`a cluster of ${count} nodes needs ${count} client ports, route ports and hosts`);
  }
  if (options.monitorPorts !== false && monitorPorts.length !== count) {
    throw new RangeError(`a cluster of ${count} nodes needs ${count} monitoring ports`);
  }
  const temporary = options.storeRoot === undefined;
  const storeRoot = options.storeRoot ?? mkdtempSync(join(tmpdir(), "conclave-nats-cluster-"));
  const routes = routePorts.map((port, index) => `nats://${hosts[index]}:${port}`);
  const nodes = ports.map(
    (port, index) =>
      new ClusterNode({
        binary,
        name: `n${index + 1}`,
        clusterName,
        config: options.config ?? DEFAULT_NATS_CONFIG,
        host: hosts[index]!,
        port,
        routePort: routePorts[index]!,
        monitorPort: monitorPorts[index],
        launcher: options.launcher?.(index) ?? [],
        // Each node solicits the others; a route to itself would only be refused as a duplicate.
        routes: routes.filter((_, other) => other !== index),
        storeDir: join(storeRoot, `n${index + 1}`),
        env: options.env ?? process.env,
        readyTimeoutMs: options.readyTimeoutMs ?? 20_000,
      }),
  );
  const stop = async () => {
    await Promise.all(nodes.map((node) => node.kill("SIGTERM")));
    if (temporary) rmSync(storeRoot, { recursive: true, force: true });
  };
  try {
    await Promise.all(nodes.map((node) => node.start()));
  } catch (error) {
    await stop();
    throw error;
  }
  const urls = nodes.map((node) => node.url);
  const monitorUrl = nodes.flatMap((node) => (node.monitorUrl ? [node.monitorUrl] : [])).join(",");
  return { name: clusterName, nodes, urls, url: urls.join(","), monitorUrl, storeRoot, stop };
}

/** `count` distinct free loopback ports, none of them in `taken`. */
async function freePorts(count: number, taken: readonly number[] = []): Promise<number[]> {
  const chosen: number[] = [];
  while (chosen.length < count) {
    const port = await freePort();
    if (!chosen.includes(port) && !taken.includes(port)) chosen.push(port);
  }
  return chosen;
}

interface NodeSettings {
  binary: string;
  name: string;
  clusterName: string;
  config: string;
  host: string;
  port: number;
  routePort: number;
  monitorPort: number | undefined;
  launcher: string[];
  routes: string[];
  storeDir: string;
  env: NodeJS.ProcessEnv;
  readyTimeoutMs: number;
}

class ClusterNode implements NatsClusterNode {
  #child: ChildProcess | null = null;
  #exited: Promise<void> = Promise.resolve();

  constructor(private readonly settings: NodeSettings) {}

  get name() {
    return this.settings.name;
  }
  get url() {
    return `nats://${this.settings.host}:${this.settings.port}`;
  }
  get port() {
    return this.settings.port;
  }
  get routePort() {
    return this.settings.routePort;
  }
  get monitorUrl() {
    const { host, monitorPort } = this.settings;
    return monitorPort === undefined ? undefined : `http://${host}:${monitorPort}`;
  }
  get storeDir() {
    return this.settings.storeDir;
  }
  get process() {
    return this.#child;
  }

  async start(): Promise<void> {
    if (this.#child) throw new Error(`node ${this.name} is already running`);
    const { binary, config, host, port, routePort, monitorPort, routes, storeDir, name, clusterName } = this.settings;
    mkdirSync(storeDir, { recursive: true });
    const args = ["-c", config, "-a", host, "-p", String(port), "-sd", storeDir, "--server_name", name];
    args.push("--cluster_name", clusterName, "--cluster", `nats://${host}:${routePort}`);
    if (routes.length > 0) args.push("--routes", routes.join(","));
    // The monitoring port listens on the node's address (-a), loopback by default.
    if (monitorPort !== undefined) args.push("-m", String(monitorPort));
    const [command, ...prefix] = [...this.settings.launcher, binary];
    const child = spawn(command!, [...prefix, ...args], {
      stdio: ["ignore", "ignore", "pipe"],
      env: this.settings.env,
    });
    this.#child = child;
    this.#exited = new Promise<void>((done) => child.once("exit", () => done()));
    void this.#exited.then(() => {
      if (this.#child === child) this.#child = null;
    });
    let output = "";
    const { readyTimeoutMs } = this.settings;
    await withDeadline(
      readyTimeoutMs,
      () =>
        new Promise<void>((ready, fail) => {
          let listening = false;
          const onData = (chunk: Buffer) => {
            output = (output + chunk.toString()).slice(-KEPT_OUTPUT);
            listening ||= output.includes("Server is ready");
            // A single node is its own leader; in a cluster, ready means it knows the meta leader.
            if (listening && (routes.length === 0 || META_LEADER.test(output))) {
              child.stderr!.off("data", onData);
              ready();
            }
          };
          child.stderr!.on("data", onData);
          child.once("exit", (code) => fail(new Error(`nats-server ${name} exited with code ${code}:\n${output}`)));
        }),
      () => new Error(`nats-server ${name} did not join its cluster within ${readyTimeoutMs} ms:\n${output}`),
    ).catch(async (error: unknown) => {
      await this.kill();
      throw error;
    });
    // Keep the pipe drained: a full pipe would block the server.
    child.stderr!.resume();
  }

  async kill(signal: NodeJS.Signals = "SIGKILL"): Promise<void> {
    const child = this.#child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    child.kill(signal);
    const timer = signal === "SIGKILL" ? undefined : setTimeout(() => child.kill("SIGKILL"), 5_000);
    await this.#exited;
    clearTimeout(timer);
  }
}
