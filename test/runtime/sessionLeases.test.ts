/**
 * Letting a session go (src/runtime/runner/leases.ts) when NATS refuses the
 * delete of its ownership record for a while (a heal: "jetstream is not
 * enabled"): the runner tries again until the record is gone. Left naming a
 * live runner that no longer pulls the session's partition, the record would
 * keep every later turn of the session from the runner that does. The refusal
 * here is the runner role losing its write to the owners' bucket, by a
 * configuration reload, then getting it back.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Kvm } from "@nats-io/kv";
import { describe, expect, it } from "vitest";
import { buckets } from "../../src/bus/subjects.ts";
import { SessionLeases } from "../../src/runtime/runner/leases.ts";
import { type Logger, silentLogger } from "../../src/telemetry/log.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { until } from "../helpers/wait.ts";

const nats = useNatsServer({ editConfig: (config) => config });
const OWNERS_WRITE = `"$KV.${buckets.owners}.>",`;

/**
 * Rewrites the server's configuration with or without the owners' bucket write, and reloads it (SIGHUP). A
 * reload compares the store directory with the running one, which came from `-sd`: the file names it too.
 */
function ownersWritable(writable: boolean, original: string): void {
  const edited = writable ? original : original.replaceAll(OWNERS_WRITE, "");
  const withStore = edited.replace("jetstream {\n", `jetstream {\n  store_dir: "${nats.storeDir}"\n`);
  writeFileSync(join(nats.storeDir, "nats.conf"), withStore);
  nats.server.process.kill("SIGHUP");
}

describe("a runner letting a session go", () => {
  it("deletes its ownership record once NATS takes the delete, however long it refused it", async () => {
    const original = readFileSync(join(nats.storeDir, "nats.conf"), "utf8");
    expect(original).toContain(OWNERS_WRITE);
    const refused: string[] = [];
    const log: Logger = { ...silentLogger, warn: (message: string) => refused.push(message) };
    const leases = await SessionLeases.open(await nats.connect("runner"), "keeper", { log });
    const owners = await new Kvm(await nats.connect("runner")).create(buckets.owners);
    try {
      expect(await leases.acquire("kept")).toBe(true);
      ownersWritable(false, original);
      // The reload has taken once a write of the bucket is refused.
      await until(
        async () =>
          !(await owners.put("probe", "x").then(
            () => true,
            () => false,
          )),
        {
          timeoutMs: 10_000,
          everyMs: 100,
          what: "the owners' bucket refused",
        },
      );
      const released = leases.release("kept");
      await until(() => refused.some((line) => line.includes("session kept: not let go yet")), {
        timeoutMs: 15_000,
        everyMs: 50,
        what: "the first delete refused",
      });
      expect((await owners.get("kept"))?.operation).toBe("PUT"); // still naming the keeper
      ownersWritable(true, original);
      await released;
      const record = await owners.get("kept");
      expect(record === null || record.operation !== "PUT").toBe(true);
    } finally {
      ownersWritable(true, original);
      await leases.close();
    }
  }, 60_000);
});
