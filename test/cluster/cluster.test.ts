/**
 * Conclave on a three-node NATS cluster (the file's one cluster, shared by its
 * tests): with CONCLAVE_REPLICAS=3 every stream and KV bucket is R3, a turn
 * completes through a runner and workers each connected to a different node,
 * `conclave status` shows the three nodes, the JetStream meta leader (read from
 * a node's monitoring port) and the R3 streams, and a process
 * configured for other replicas is refused with one line.
 */
import { jetstreamManager } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { JsonKv } from "../../src/bus/jsonKv.ts";
import { buckets } from "../../src/bus/subjects.ts";
import { type ConclaveClient, connect } from "../../src/client/index.ts";
import { ensureEventStreams, eventStreamCount, eventStreamNames } from "../../src/eventlog/eventStreams.ts";
import type { ClusterStatus } from "../../src/nats/clusterStatus.ts";
import { ReplicasMismatchError } from "../../src/nats/replicas.ts";
import { freePort } from "../../src/nats/server.ts";
import { runConclave } from "../helpers/cli.ts";
import { useNatsCluster } from "../helpers/natsCluster.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";

const nats = useNatsCluster(3);
/** Each process is given one node's URL: it connects there (and learns the others for reconnecting). */
let nodeOf: Record<string, number> = {};
/** The URL the next process spawned is given. */
let nodeUrl = "";
const processes = useConclaveProcesses(
  () => nodeUrl,
  () => ({ CONCLAVE_REPLICAS: "3" }),
);
let client: ConclaveClient;

beforeAll(async () => {
  nodeOf = { "worker-agents": 0, "worker-core": 1, runner: 2 };
  const layout: [string, string[]][] = [
    ["worker-agents", ["worker", "--agents", "*"]],
    ["worker-core", ["worker", "--services", "scheduler,council,critics,memory"]],
    ["runner", ["runner"]],
  ];
  for (const [name, args] of layout) {
    nodeUrl = nats.node(nodeOf[name]!).url;
    await processes.spawn(name, args);
  }
  client = await connect({ servers: nats.node(0).url });
}, 90_000);
afterAll(async () => {
  await client?.close();
});

describe("a three-node cluster", () => {
  it("runs a turn through a runner and workers connected to different nodes", async () => {
    const result = await client.submit("cluster-basic", "hello from the cluster").result;
    expect(result.response.length).toBeGreaterThan(0);
    expect(new Set(Object.values(nodeOf)).size).toBe(3);
  });

  it("keeps every Conclave stream and KV bucket as three healthy replicas, one per node", async () => {
    const status = await nats.healthy(await nats.connect("observer", 1));
    expectThreeNodesAndR3(status);
    expect(status.server.name).toBe("n2");
  });

  it("`conclave status` shows the three nodes, the JetStream meta leader and the R3 streams", async () => {
    // A node that does not answer is passed over: the next endpoint names the leader.
    const monitor = `http://127.0.0.1:${await freePort()},${nats.cluster.monitorUrl}`;
    const { code, stdout, stderr } = await runConclave(nats.node(0).url, ["status", "--json", "--monitor", monitor]);
    expect(stderr).toBe("");
    expect(code).toBe(0);
    const status = JSON.parse(stdout) as ClusterStatus;
    expectThreeNodesAndR3(status);
    // Every stream of the event log, each led by a node.
    const streams = eventStreamNames(await eventStreamCount(await nats.connect("observer")));
    expect(status.eventLog.map((log) => log.stream)).toEqual(streams);
    for (const log of status.eventLog) expect(["n1", "n2", "n3"], log.stream).toContain(log.leader);
    expect(["n1", "n2", "n3"]).toContain(status.metaLeader);
    const text = await runConclave(nats.node(0).url, ["status", "--monitor", nats.node(2).monitorUrl!]);
    expect(text.code).toBe(0);
    expect(text.stdout).toContain("nodes: 3");
    expect(text.stdout).toContain(`JetStream meta leader: ${status.metaLeader}\n`);
    for (const stream of streams)
      expect(text.stdout).toMatch(new RegExp(`${stream}\\s+stream\\s+R3\\s+healthy\\s+leader n\\d`));
    // Without a monitoring endpoint NATS does not tell a Conclave role the meta leader: status says so.
    const unknown = await runConclave(nats.node(0).url, ["status"]);
    expect(unknown.code).toBe(0);
    expect(unknown.stdout).toMatch(
      /JetStream meta leader: unknown: no monitoring endpoint given \(conclave status --monitor/,
    );
    const refused = await runConclave(nats.node(0).url, ["status", "--monitor", "nats://127.0.0.1:4222"]);
    expect(refused.code).toBe(2);
    expect(refused.stderr.trim().split("\n")).toHaveLength(1);
    expect(refused.stderr).toContain("--monitor takes http://HOST:PORT URLs");
  });

  it("refuses a process configured for other replicas with one line, and changes nothing", async () => {
    const runner = await nats.connect("runner", 0);
    // In this process CONCLAVE_REPLICAS is unset: one replica.
    const refused = await ensureEventStreams(await jetstreamManager(runner)).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(ReplicasMismatchError);
    expect((refused as Error).message).toMatch(
      /^stream CONCLAVE_EVENTS_\d+ has 3 replicas but CONCLAVE_REPLICAS is 1;/,
    );
    const bucket = await JsonKv.open(runner, buckets.sessions, z.unknown()).catch((error: unknown) => error);
    expect(bucket).toBeInstanceOf(ReplicasMismatchError);
    expect((bucket as Error).message).toContain(
      `KV bucket ${buckets.sessions} has 3 replicas but CONCLAVE_REPLICAS is 1`,
    );

    const cli = await runConclave(nats.node(0).url, ["runner"], { CONCLAVE_REPLICAS: "1" });
    expect(cli.code).toBe(2);
    const lines = cli.stderr.trim().split("\n");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/has 3 replicas but CONCLAVE_REPLICAS is 1/);

    // Nothing was changed: still R3 everywhere.
    expectThreeNodesAndR3(await nats.healthy(await nats.connect("observer")));
  });

  it("lets read-only commands read R3 stores without CONCLAVE_REPLICAS=3", async () => {
    await client.submit("cluster-read", "a turn to read back").result;
    // As `conclave up --cluster 3` users run it: CONCLAVE_REPLICAS unset (empty counts as unset), one replica.
    const cli = await runConclave(nats.node(1).url, ["turns", "--session", "cluster-read", "--json"], {
      CONCLAVE_REPLICAS: "",
    });
    expect(cli.stderr).toBe("");
    expect(cli.code).toBe(0);
    expect(JSON.parse(cli.stdout.trim())).toMatchObject({ turn_id: 1, status: "done" });
    // The client reads it the same way, and nothing was changed.
    const reader = await connect({ servers: nats.node(2).url });
    expect(await reader.turns("cluster-read").finally(() => reader.close())).toHaveLength(1);
    expectThreeNodesAndR3(await nats.healthy(await nats.connect("observer")));
  });
});

function expectThreeNodesAndR3(status: ClusterStatus): void {
  expect(status.server.cluster).toBe("conclave");
  expect(status.nodes.map((node) => node.name)).toEqual(["n1", "n2", "n3"]);
  expect(status.nodes.every((node) => node.online)).toBe(true);
  const present = status.stores.filter((store) => store.health !== "absent");
  // The runner and workers have created the event log, the WAL, the status and session buckets, and more.
  expect(present.map((store) => store.stream)).toEqual(
    expect.arrayContaining(["CONCLAVE_EVENTS_0", "CONCLAVE_TURNS", "KV_conclave_turns", "KV_conclave_sessions"]),
  );
  for (const store of present) {
    expect(store, store.stream).toMatchObject({ replicas: 3, health: "healthy" });
    expect(store.copies.map((copy) => copy.node).sort(), store.stream).toEqual(["n1", "n2", "n3"]);
  }
}
