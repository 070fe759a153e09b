/**
 * The event log's stream leaders on a three-node cluster: a node that
 * restarts leads none of the log's streams (JetStream does not move leaders
 * back), so the other two take every write; balancing asks the surplus
 * leaders to step down until each node leads its share.
 */
import { jetstreamManager } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { balanceEventLeaders, leaderSpread, surplusStream } from "../../src/eventlog/eventLeaders.ts";
import { ensureEventStreams } from "../../src/eventlog/eventStreams.ts";
import { useNatsCluster } from "../helpers/natsCluster.ts";
import { until } from "../helpers/wait.ts";

const nats = useNatsCluster(3);
const STREAMS = 6;
const replicasBefore = process.env.CONCLAVE_REPLICAS;

beforeAll(() => {
  process.env.CONCLAVE_REPLICAS = "3"; // every stream on every node, as a runner of the cluster makes them
});
afterAll(() => {
  if (replicasBefore === undefined) delete process.env.CONCLAVE_REPLICAS;
  else process.env.CONCLAVE_REPLICAS = replicasBefore;
});

describe("the event log's stream leaders", () => {
  it("are spread again over the nodes after a node restarts and leads none", async () => {
    const nc = await nats.connect("runner");
    const jsm = await jetstreamManager(nc);
    expect(await ensureEventStreams(jsm, STREAMS)).toBe(STREAMS);
    const observer = await nats.connect("observer");
    await nats.healthy(observer);

    // A node that leads some of them restarts: elections give its streams to the other two.
    const spread = await leaderSpread(jsm, STREAMS);
    const victim = nats.cluster.nodes.find((node) => (spread.leads.get(node.name) ?? []).length > 0)!;
    await victim.kill();
    await until(
      async () => {
        const during = await leaderSpread(jsm, STREAMS).catch(() => null);
        const led = during ? [...during.leads.entries()].filter(([node]) => node !== victim.name) : [];
        return led.reduce((total, [, streams]) => total + streams.length, 0) === STREAMS;
      },
      { timeoutMs: 30_000, everyMs: 200, what: "the other nodes leading every stream" },
    );
    await victim.start();
    await nats.healthy(observer);
    const bunched = await leaderSpread(jsm, STREAMS);
    expect(bunched.leads.get(victim.name)).toEqual([]);
    expect(surplusStream(bunched, STREAMS)).not.toBeNull();

    const asked = await balanceEventLeaders(nc, jsm, STREAMS);
    const balanced = await leaderSpread(jsm, STREAMS);
    console.log(`asked ${asked} step-downs; leaders: ${JSON.stringify(Object.fromEntries(balanced.leads))}`);
    expect(asked).toBeGreaterThan(0);
    for (const node of nats.cluster.nodes) expect(balanced.leads.get(node.name)?.length, node.name).toBe(2);
  }, 120_000);
});
