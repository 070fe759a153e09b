/**
 * `conclave status` on a three-node cluster whose JetStream meta leader is
 * killed (SIGKILL): once its monitoring port stops answering, status never
 * shows it online nor as the meta leader (the survivors still name it until
 * they elect another: "no meta leader reachable (last named X, unreachable)"),
 * then names the node they elect. Without monitoring endpoints, the event
 * log's leader stops hearing from the dead node's copy (`active`), and status
 * shows the node offline within seconds (nats-server 2.9.10 never sets the
 * copy's `offline`).
 */
import { jetstreamManager } from "@nats-io/jetstream";
import { beforeAll, describe, expect, it } from "vitest";
import { eventStream, subjects } from "../../src/bus/subjects.ts";
import { ensureStream } from "../../src/eventlog/streams.ts";
import { type ClusterStatus, readClusterStatus } from "../../src/nats/clusterStatus.ts";
import { runConclave } from "../helpers/cli.ts";
import { useNatsCluster } from "../helpers/natsCluster.ts";
import { eventually, until } from "../helpers/wait.ts";

const nats = useNatsCluster(3);
const EVENTS = eventStream(0);

beforeAll(async () => {
  // The event log's first stream (the one status reads by default), R3: a copy on every node, for the
  // streams' view of the nodes.
  const jsm = await jetstreamManager(await nats.connect("runner"));
  await ensureStream(jsm, { name: EVENTS, subjects: [subjects.streamEvents(0)], num_replicas: 3 });
  await nats.healthy(await nats.connect("observer"));
});

describe("conclave status when a node dies", () => {
  it("never shows a killed meta leader online or leading, then names the one elected", async () => {
    const monitor = nats.cluster.monitorUrl;
    const before = await readClusterStatus(await nats.connect("observer"), { monitor });
    expect(before.nodes.map((node) => [node.name, node.online, node.reachable])).toEqual([
      ["n1", true, true],
      ["n2", true, true],
      ["n3", true, true],
    ]);
    const victim = nats.cluster.nodes.find((node) => node.name === before.metaLeader);
    expect(victim, `meta leader ${before.metaLeader}`).toBeDefined();
    const survivor = nats.cluster.nodes.findIndex((node) => node !== victim);
    const observer = await nats.connect("observer", survivor);

    await victim!.kill();
    // From here on its monitoring port is closed: every reading must show it down, never leading.
    const readings: ClusterStatus[] = [];
    await until(
      async () => {
        const status = await readClusterStatus(observer, { monitor });
        readings.push(status);
        const dead = status.nodes.find((node) => node.name === victim!.name);
        expect(dead, JSON.stringify(status.nodes)).toMatchObject({ online: false, reachable: false });
        expect(dead!.offlineBecause).toMatch(/^unreachable \(no answer from http:/);
        expect(status.metaLeader).not.toBe(victim!.name);
        // Its copy of the event log counts as offline too (when the log's info answered at all).
        const copy = status.stores.find((store) => store.stream === EVENTS)?.copies.find((c) => c.node === dead!.name);
        if (copy) expect(copy).toMatchObject({ leader: false, offline: true });
        return status.metaLeader !== undefined;
      },
      { timeoutMs: 30_000, everyMs: 200, what: "a new meta leader named" },
    );
    // The survivors went on naming the dead node for a while (the election takes seconds): said so.
    expect(readings[0]!.metaLeaderProblem).toBe(`no meta leader reachable (last named ${victim!.name}, unreachable)`);
    expect(readings[0]!.lastNamedMetaLeader).toBe(victim!.name);
    const after = readings.at(-1)!;
    expect(after.nodes.filter((node) => node.online).map((node) => node.name)).toEqual(
      nats.cluster.nodes.filter((node) => node !== victim).map((node) => node.name),
    );
    expect(after.lastNamedMetaLeader).toBeUndefined();

    // The command line says the same.
    const text = await runConclave(nats.node(survivor).url, ["status", "--monitor", monitor]);
    expect(text.stderr).toBe("");
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(new RegExp(`^  ${victim!.name}\\s+offline\\s+leads 0\\s+unreachable \\(`, "m"));
    const named = /^JetStream meta leader: (\S+)$/m.exec(text.stdout)?.[1];
    expect(named, text.stdout).toBeDefined();
    expect(named).not.toBe(victim!.name);

    // Without monitoring endpoints, the event log's leader stops hearing from the dead node's copy.
    const quiet = await eventually(
      () => readClusterStatus(observer),
      (status) => status.nodes.find((node) => node.name === victim!.name)?.online === false,
      { timeoutMs: 30_000, everyMs: 250 },
    );
    const dead = quiet.nodes.find((node) => node.name === victim!.name);
    expect(dead, JSON.stringify(quiet.nodes)).toMatchObject({ online: false });
    expect(dead!.reachable).toBeUndefined();
    expect(dead!.offlineBecause).toMatch(/^CONCLAVE_EVENTS_0's leader has not heard from it for \d+\.\d s$/);
    const events = quiet.stores.find((store) => store.stream === EVENTS);
    expect(events).toMatchObject({ health: "degraded" });
    expect(events!.copies.find((copy) => copy.node === victim!.name)).toMatchObject({ offline: true });
  }, 90_000);
});
