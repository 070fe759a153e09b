/**
 * `conclave status` on a single nats-server (no cluster): one node, every
 * stream R1 and healthy, streams not created yet shown as absent; and the
 * replicas check at R1 leaves a single server's stores as they were.
 */
import { jetstreamManager } from "@nats-io/jetstream";
import { describe, expect, it } from "vitest";
import { ensureEventStreams, eventStreamNames } from "../../src/eventlog/eventStreams.ts";
import { ensureTurnWal } from "../../src/eventlog/turnWal.ts";
import type { ClusterStatus } from "../../src/nats/clusterStatus.ts";
import { runConclave } from "../helpers/cli.ts";
import { useNatsServer } from "../helpers/nats.ts";

const nats = useNatsServer();

describe("conclave status on a single server", () => {
  it("shows one node and R1 streams", async () => {
    const jsm = await jetstreamManager(await nats.connect("runner"));
    const count = await ensureEventStreams(jsm);
    await ensureTurnWal(jsm);
    await ensureEventStreams(jsm); // existing R1 streams at R1: accepted, unchanged

    const { code, stdout, stderr } = await runConclave(nats.url, ["status", "--json"]);
    expect(stderr).toBe("");
    expect(code).toBe(0);
    const status = JSON.parse(stdout) as ClusterStatus;
    expect(status.server.cluster).toBeUndefined();
    expect(status.nodes).toHaveLength(1);
    const byName = new Map(status.stores.map((store) => [store.stream, store]));
    for (const stream of eventStreamNames(count))
      expect(byName.get(stream), stream).toMatchObject({ replicas: 1, health: "healthy" });
    expect(status.eventLog.map((log) => log.stream)).toEqual(eventStreamNames(count));
    expect(byName.get("CONCLAVE_TURNS")).toMatchObject({ replicas: 1, health: "healthy" });
    expect(byName.get("CONCLAVE_AUDIT")).toMatchObject({ health: "absent" });

    const text = await runConclave(nats.url, ["status"]);
    expect(text.code).toBe(0);
    expect(text.stdout).toContain("no cluster");
    for (const stream of eventStreamNames(count))
      expect(text.stdout).toMatch(new RegExp(`${stream}\\s+stream\\s+R1\\s+healthy`));
  });
});
