import { printable } from "../../client/printable.ts";
import { setting } from "../../config/load.ts";
import { DEFAULT_EVENT_STREAMS, eventStreamCount } from "../../eventlog/eventStreams.ts";
import {
  type ClusterStatus,
  type NodeStatus,
  readClusterStatus,
  SILENT_AFTER_MS,
  type StoreStatus,
} from "../../nats/clusterStatus.ts";
import { monitorUrls } from "../../nats/monitor.ts";
import { UsageError } from "../args.ts";
import { defineCommand } from "../command.ts";
import { EXIT } from "../failures.ts";

const help = `conclave status: the NATS server or cluster, and each Conclave stream's replicas and health

Usage: conclave status [--monitor URL[,URL…]] [--json]

Shows the server this connection reached, the cluster's nodes (online or offline, and why:
its monitoring endpoint does not answer, or a leader has not heard from it for over
${SILENT_AFTER_MS / 1000} s; how many streams each leads), the JetStream meta leader, the node
leading each of the event log's streams, and for each Conclave stream and KV bucket its replicas (R1, R3…), its
leader and each copy: current, behind (lag) or offline. Health: healthy · degraded (a copy
offline or behind: writes go on while a majority is up) · no_leader (writes wait for an
election) · absent (not created yet) · unreadable. With --json, one JSON object.

  --monitor URL   the HTTP monitoring endpoint of the nodes (nats-server -m; comma-separated,
                  give every node's), all asked at once: a node whose endpoint does not answer
                  is shown unreachable, and the JetStream meta leader (/jsz; NATS tells it only
                  to the system account, which no Conclave role is) is the one most nodes name,
                  never a node that is down ("none reachable (last named X, unreachable)").
                  Default: CONCLAVE_NATS_MONITOR (conclave up --cluster sets it)`;

export default defineCommand({
  help,
  flags: { json: { type: "boolean" }, monitor: { type: "string" } },
  role: "observer",
  async run({ values, bus }) {
    const monitor = monitorUrls(values.monitor ?? setting(process.env, "CONCLAVE_NATS_MONITOR"));
    const invalid = monitor.find((url) => !/^https?:\/\/[^/\s]+$/.test(url));
    if (invalid !== undefined)
      throw new UsageError(`--monitor takes http://HOST:PORT URLs, not ${JSON.stringify(invalid)}`);
    const nc = await bus();
    // An observer that may not read the log's first stream still gets the rest of the status.
    const eventStreams = await eventStreamCount(nc).catch(() => DEFAULT_EVENT_STREAMS);
    const status = await readClusterStatus(nc, { monitor, eventStreams });
    if (values.json) console.log(JSON.stringify(status));
    else for (const line of describe(status)) console.log(printable(line, { newlines: false }));
    return EXIT.ok;
  },
});

/** The status as lines for a person. */
function describe(status: ClusterStatus): string[] {
  const { server } = status;
  const lines = [
    `connected to ${server.name} at ${server.url} (nats-server ${server.version}${server.cluster ? `, cluster ${server.cluster}` : ", no cluster"})`,
    `nodes: ${status.nodes.length}`,
    ...status.nodes.map(nodeLine),
  ];
  const lastNamed = status.nodes.find((node) => node.name === status.lastNamedMetaLeader);
  if (status.metaLeader) lines.push(`JetStream meta leader: ${status.metaLeader}`);
  else if (!server.cluster) lines.push("JetStream meta leader: none (a single server, no cluster)");
  else if (lastNamed)
    lines.push(
      `JetStream meta leader: none reachable (last named ${lastNamed.name}, ${lastNamed.reachable === false ? "unreachable" : "offline"})`,
    );
  else lines.push(`JetStream meta leader: unknown: ${status.metaLeaderProblem}`);
  lines.push(
    `event log: ${status.eventLog.length} streams, led by ${status.eventLog.map((stream) => `${stream.stream} ${stream.leader ?? "(none)"}`).join(", ")}`,
  );
  lines.push("streams and KV buckets:");
  const width = Math.max(...status.stores.map((store) => store.stream.length));
  for (const store of status.stores) lines.push(`  ${store.stream.padEnd(width)}  ${storeLine(store)}`);
  return lines;
}

function nodeLine(node: NodeStatus): string {
  const state = node.online ? "online " : "offline";
  const notes = [
    ...(node.offlineBecause ? [node.offlineBecause] : []),
    ...(node.connected ? ["(this connection)"] : []),
  ];
  return [`  ${node.name.padEnd(12)} ${state}  leads ${node.leads}`, ...notes].join("  ");
}

function storeLine(store: StoreStatus): string {
  const kind = store.kind.padEnd(9);
  if (store.health === "absent") return `${kind}  --  absent (not created yet)`;
  if (store.health === "unreadable") return `${kind}  --  unreadable: ${store.problem ?? "no answer"}`;
  const copies = store.copies
    .filter((copy) => !copy.leader)
    .map((copy) => `${copy.node} ${copy.offline ? offlineCopy(copy) : copy.current ? "current" : `lag ${copy.lag}`}`);
  return [
    kind,
    `R${store.replicas}`,
    store.health.padEnd(9),
    ...(store.leader ? [`leader ${store.leader}`] : []),
    ...(copies.length > 0 ? [`replicas ${copies.join(", ")}`] : []),
    `${store.messages} messages`,
  ].join("  ");
}

/** `offline`, or `offline (unheard 7.2 s)` when its leader has not heard from it for a while. */
function offlineCopy(copy: StoreStatus["copies"][number]): string {
  const unheard = copy.lastSeenMs !== undefined && copy.lastSeenMs > SILENT_AFTER_MS;
  return unheard ? `offline (unheard ${Math.round(copy.lastSeenMs! / 1000)} s)` : "offline";
}
