/**
 * A NATS cluster whose nodes each live in their own Linux network namespace
 * on this machine, so a test can cut one node's link (a network partition)
 * instead of killing its process. Each namespace has a veth pair whose other
 * end is a port of one bridge in the root namespace; the bridge holds the
 * subnet's last address, so runners, workers and clients (in the root
 * namespace) reach every node at its own 10.x address, and the nodes route to
 * one another through the bridge. Cutting a node = its bridge port down: the
 * node keeps running, cut off from the others and from every client.
 *
 * Needs root and `ip netns` (iproute2); {@link netnsSupport} says whether this
 * machine has them. Names are unique per run (they carry this process's id),
 * and a run's leftovers whose process is gone are removed by the next run.
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { type RunningNatsCluster, startNatsCluster } from "../../src/nats/cluster.ts";

const run = promisify(execFile);

/** Runs `ip …`; rejects with its stderr in one line. */
async function ip(...args: string[]): Promise<string> {
  try {
    return (await run("ip", args)).stdout;
  } catch (error) {
    const { stderr, message } = error as { stderr?: string; message: string };
    throw new Error(`ip ${args.join(" ")}: ${(stderr || message).trim().replace(/\s+/g, " ")}`);
  }
}

/** Whether network namespaces can be made here, and if not, why. */
export type NetnsSupport = { available: true } | { available: false; reason: string };

/** Checks for root and a working `ip netns` by adding and deleting a namespace. */
export async function netnsSupport(): Promise<NetnsSupport> {
  if (process.getuid?.() !== 0) return { available: false, reason: "not running as root" };
  const probe = `cvq${runId()}`;
  try {
    await ip("netns", "add", probe);
  } catch (error) {
    return { available: false, reason: (error as Error).message };
  }
  await ip("netns", "del", probe).catch(() => {});
  return { available: true };
}

/** This process's id in base 36, five characters: interface names hold at most 15. */
const pidTag = (pid = process.pid) => pid.toString(36).padStart(5, "0").slice(-5);
/** A tag unique to one cluster of this process. */
const runId = () =>
  `${pidTag()}${Math.floor(Math.random() * 36 ** 2)
    .toString(36)
    .padStart(2, "0")}`;
/** Names this helper makes: `cv` + kind (b bridge, h host end, n namespace, q probe) + pid tag + run tag. */
const OURS = /^cv[bhnq]([0-9a-z]{5})[0-9a-z]{2}/;

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
};

/** Removes namespaces and links left by runs whose process is gone (a crash before its clean-up). */
async function removeLeftovers(): Promise<void> {
  const stale = (name: string) => {
    const match = OURS.exec(name);
    return match !== null && !alive(Number.parseInt(match[1]!, 36));
  };
  const namespaces = (await ip("netns", "list")).split("\n").map((line) => line.split(" ")[0] ?? "");
  for (const name of namespaces.filter(stale)) await ip("netns", "del", name).catch(() => {});
  const links = (await ip("-o", "link", "show"))
    .split("\n")
    .map((line) => line.split(":")[1]?.trim().split("@")[0] ?? "");
  for (const name of links.filter(stale)) await ip("link", "del", name).catch(() => {});
}

/** A cluster of one node per namespace, and its links. */
export interface NetnsCluster {
  /** Its `stop` also removes the namespaces, the veth pairs and the bridge. */
  cluster: RunningNatsCluster;
  /** Node `index`'s namespace. */
  namespaces: readonly string[];
  /** Cuts node `index` off from everything: its bridge port goes down (the process keeps running). */
  cut(index: number): Promise<void>;
  /** Puts its bridge port back up. */
  heal(index: number): Promise<void>;
}

/**
 * Makes `nodes` namespaces on one bridge with 10.x addresses, and starts the cluster there: each
 * node's nats-server runs through `ip netns exec` on the standard ports (4222 clients, 6222 routes,
 * 8222 monitoring) of its own address. On any failure what was made is removed.
 */
export async function startNetnsCluster(nodes = 3): Promise<NetnsCluster> {
  await removeLeftovers();
  const id = runId();
  const bridge = `cvb${id}`;
  const namespaces = Array.from({ length: nodes }, (_, index) => `cvn${id}n${index + 1}`);
  const hostEnds = namespaces.map((_, index) => `cvh${id}n${index + 1}`);
  // A /24 among 10.200.0.0–10.249.255.0, unlikely to be in use here.
  const subnet = `10.${200 + Math.floor(Math.random() * 50)}.${Math.floor(Math.random() * 256)}`;
  const hosts = namespaces.map((_, index) => `${subnet}.${index + 1}`);
  const teardown = async () => {
    for (const namespace of namespaces) await ip("netns", "del", namespace).catch(() => {});
    // Deleting a namespace deletes its veth end, and with it the pair; the bridge is ours to delete.
    for (const link of [...hostEnds, bridge]) await ip("link", "del", link).catch(() => {});
  };
  try {
    await ip("link", "add", bridge, "type", "bridge");
    await ip("addr", "add", `${subnet}.254/24`, "dev", bridge);
    await ip("link", "set", bridge, "up");
    for (const [index, namespace] of namespaces.entries()) {
      const inside = `cvp${id}n${index + 1}`;
      await ip("netns", "add", namespace);
      await ip("link", "add", hostEnds[index]!, "type", "veth", "peer", "name", inside);
      await ip("link", "set", inside, "netns", namespace);
      await ip("link", "set", hostEnds[index]!, "master", bridge);
      await ip("link", "set", hostEnds[index]!, "up");
      await ip("-n", namespace, "addr", "add", `${hosts[index]}/24`, "dev", inside);
      await ip("-n", namespace, "link", "set", inside, "up");
      await ip("-n", namespace, "link", "set", "lo", "up");
    }
    const cluster = await startNatsCluster({
      nodes,
      hosts,
      ports: hosts.map(() => 4222),
      routePorts: hosts.map(() => 6222),
      monitorPorts: hosts.map(() => 8222),
      launcher: (index) => ["ip", "netns", "exec", namespaces[index]!],
    });
    const stop = async () => {
      // Links back up first, so the nodes' SIGTERM shutdown is not held by a cut route.
      for (const link of hostEnds) await ip("link", "set", link, "up").catch(() => {});
      await cluster.stop();
      await teardown();
    };
    return {
      cluster: { ...cluster, stop },
      namespaces,
      cut: async (index) => {
        await ip("link", "set", hostEnds[index]!, "down");
      },
      heal: async (index) => {
        await ip("link", "set", hostEnds[index]!, "up");
      },
    };
  } catch (error) {
    await teardown();
    throw error;
  }
}
