/**
 * `conclave up --cluster 3`, as on a fresh clone: three nats-server nodes,
 * the runner and the workers; `conclave send` completes a turn and
 * `conclave status` shows three nodes and R3 streams (through `--exec`, which
 * stops it all after).
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { CONCLAVE_BIN } from "../../src/cli/childProcess.ts";
import type { ClusterStatus } from "../../src/nats/clusterStatus.ts";
import { freePort } from "../../src/nats/server.ts";

const dataDir = mkdtempSync(join(tmpdir(), "conclave-up-cluster-"));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));
const conclave = `"${process.execPath}" "${CONCLAVE_BIN}"`;

/** Whether a loopback port can be listened on now. */
const isFree = (port: number) =>
  new Promise<boolean>((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
  });

/** A client port from which `up --cluster 3` finds its three client ports and their route ports (2000 above) free. */
async function clusterBasePort(): Promise<number> {
  for (;;) {
    const base = await freePort();
    if (base + 2_002 > 65_535) continue;
    const others = [base + 1, base + 2, base + 2_000, base + 2_001, base + 2_002];
    if ((await Promise.all(others.map(isFree))).every(Boolean)) return base;
  }
}

describe("conclave up --cluster 3", () => {
  it("serves turns on a three-node cluster whose streams are R3", async () => {
    const base = await clusterBasePort();
    const statusFile = join(dataDir, "status.json");
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [
        CONCLAVE_BIN,
        "up",
        "--cluster",
        "3",
        "--nats-url",
        `nats://127.0.0.1:${base}`,
        "--data-dir",
        dataDir,
        "--exec",
        `${conclave} send --session up-cluster "hello, cluster" && ${conclave} status --json > "${statusFile}"`,
      ],
      { env: { ...process.env, CONCLAVE_LOG: "quiet" }, timeout: 120_000 },
    );
    expect(stdout).toMatch(/started a 3-node NATS cluster: n1 nats:\/\/127\.0\.0\.1:\d+, n2 .*, n3 /);
    expect(stdout).toMatch(/reply: \S/);
    expect(stdout).toMatch(/\[up\] stopped/);
    const status = JSON.parse(readFileSync(statusFile, "utf8")) as ClusterStatus;
    expect(status.nodes.map((node) => node.name)).toEqual(["n1", "n2", "n3"]);
    // `up` gives its processes the nodes' monitoring endpoints: status names the JetStream meta leader.
    expect(stdout).toMatch(/monitoring endpoints: http:\/\/127\.0\.0\.1:\d+,/);
    expect(["n1", "n2", "n3"]).toContain(status.metaLeader);
    const events = status.stores.filter((store) => store.stream.startsWith("CONCLAVE_EVENTS_"));
    expect(events.map((store) => store.stream)).toEqual([
      "CONCLAVE_EVENTS_0",
      "CONCLAVE_EVENTS_1",
      "CONCLAVE_EVENTS_2",
    ]);
    for (const stream of events) expect(stream).toMatchObject({ replicas: 3, health: "healthy" });
    // Each stream's leader is one of the nodes.
    expect(status.eventLog.map((stream) => ["n1", "n2", "n3"].includes(stream.leader ?? ""))).toEqual([
      true,
      true,
      true,
    ]);
    for (const store of status.stores.filter((candidate) => candidate.health !== "absent")) {
      expect(store.replicas, store.stream).toBe(3);
    }
  }, 150_000);

  it("refuses a node count it cannot keep replicas for, with one line", async () => {
    const failed = await promisify(execFile)(process.execPath, [CONCLAVE_BIN, "up", "--cluster", "9"], {
      env: { ...process.env, CONCLAVE_LOG: "quiet" },
    }).catch((error: { code: number; stderr: string }) => error);
    expect(failed).toMatchObject({ code: 2 });
    expect((failed as { stderr: string }).stderr).toMatch(/--cluster must be a whole number of nodes from 1 to 5/);
  });
});
