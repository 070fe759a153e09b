import { beforeAll, describe, expect, it } from "vitest";
import { type ConclaveClient, connect } from "../../src/client/index.ts";
import { EraseRecord } from "../../src/contracts/erase.ts";
import { runConclave } from "../helpers/cli.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { useInProcessStack } from "../helpers/stack.ts";

const nats = useNatsServer();
useInProcessStack(nats);
let client: ConclaveClient;

beforeAll(async () => {
  client = await connect({ nc: await nats.connect("client") });
});

describe("conclave session erase", () => {
  it("erases the session through a runner and prints the audit record", async () => {
    await client.submit("cli-erase", "my number is 555-0100").result;
    const { code, stdout, stderr } = await runConclave(nats.url, [
      "session",
      "erase",
      "cli-erase",
      "--by",
      "ops-7",
      "--reason",
      "user request",
      "--json",
    ]);
    expect(stderr).toBe("");
    expect(code).toBe(0);
    const record = EraseRecord.parse(JSON.parse(stdout));
    expect(record).toMatchObject({ session_id: "cli-erase", requested_by: "ops-7", reason: "user request" });
    expect(record.erased.events).toBeGreaterThan(0);
    expect(stdout).not.toContain("555-0100");
    const events: unknown[] = [];
    for await (const event of client.events("cli-erase")) events.push(event);
    expect(events).toEqual([]);
    const again = await runConclave(nats.url, ["session", "erase", "cli-erase"]);
    expect(again.code).toBe(0);
    expect(again.stdout).toBe("session cli-erase erased: nothing was stored\n");
  }, 60_000);

  it("refuses a bad invocation before connecting", async () => {
    const missing = await runConclave(nats.url, ["session", "erase"]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/conclave session erase SESSION/);
    const bad = await runConclave(nats.url, ["session", "erase", "no.dots"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/bad session id/);
  });
});
