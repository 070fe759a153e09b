/**
 * Letting a session go (src/runtime/runner/leases.ts) when NATS refuses the
 * delete of its ownership record for a while (a heal: "jetstream is not
 * enabled"): the runner tries again until the record is gone. Left naming a
 * live runner that no longer pulls the session's partition, the record would
 * keep every later turn of the session from the runner that does. The refusal
 * here is the runner role losing its write to the owners' bucket, by a
 * configuration reload, then getting it back. A release stopped to take the
 * session back, where the take then fails, still lets the record go.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type KV, Kvm } from "@nats-io/kv";
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

/** Reloads the configuration (`ownersWritable`) and waits until a write of the bucket is refused or taken again. */
async function ownersWritableNow(writable: boolean, original: string, owners: KV): Promise<void> {
  ownersWritable(writable, original);
  const put = () =>
    owners.put("probe", "x").then(
      () => true,
      () => false,
    );
  await until(async () => (await put()) === writable, {
    timeoutMs: 10_000,
    everyMs: 100,
    what: `the owners' bucket ${writable ? "written again" : "refused"}`,
  });
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
      await ownersWritableNow(true, original, owners);
      await leases.close();
    }
  }, 60_000);

  it("lets it go after all when it stopped the release to take it back and could not", async () => {
    const original = readFileSync(join(nats.storeDir, "nats.conf"), "utf8");
    const refused: string[] = [];
    const log: Logger = { ...silentLogger, warn: (message: string) => refused.push(message) };
    const leases = await SessionLeases.open(await nats.connect("runner"), "taker", { log });
    const owners = await new Kvm(await nats.connect("runner")).create(buckets.owners);
    try {
      expect(await leases.acquire("retaken")).toBe(true);
      await ownersWritableNow(false, original, owners);
      const released = leases.release("retaken");
      await until(() => refused.some((line) => line.includes("session retaken: not let go yet")), {
        timeoutMs: 15_000,
        everyMs: 50,
        what: "the first delete refused",
      });
      // A delivery of the session reaches this runner again: taking it back stops the release, and fails (the
      // write is refused; or, on a loaded machine, its own lease lapsed meanwhile and it owns nothing).
      expect(await leases.acquire("retaken").catch(() => false)).toBe(false);
      await released;
      expect(leases.ownedSessions()).not.toContain("retaken");
      await ownersWritableNow(true, original, owners);
      // The record no longer names this runner once NATS takes the delete again.
      await until(
        async () => {
          const record = await owners.get("retaken");
          return record === null || record.operation !== "PUT";
        },
        { timeoutMs: 20_000, everyMs: 100, what: "the record let go of after all" },
      );
    } finally {
      await ownersWritableNow(true, original, owners);
      await leases.close();
    }
  }, 60_000);
});
