/**
 * `conclave viewer` starting and staying up, as a user runs it: with NATS down
 * it exits at once with one line naming the URL it tried (it used to wait
 * silently), a bad option is a usage error, and once connected it rides out a
 * NATS restart.
 */
import { jetstreamManager } from "@nats-io/jetstream";
import { describe, expect, it } from "vitest";
import { ensureEventStreams } from "../../src/eventlog/eventStreams.ts";
import { freePort } from "../../src/nats/server.ts";
import { runConclave } from "../helpers/cli.ts";
import { useNatsServer } from "../helpers/nats.ts";
import { useConclaveProcesses } from "../helpers/processes.ts";
import { until } from "../helpers/wait.ts";

const nats = useNatsServer();
const processes = useConclaveProcesses(() => nats.url);

describe("conclave viewer starting", () => {
  it("with NATS down, exits 3 with one line naming the URL it tried", async () => {
    const url = `nats://127.0.0.1:${await freePort()}`;
    const result = await runConclave(url, ["viewer", "--port", "0"]);
    expect(result.code).toBe(3);
    expect(result.stdout).toBe("");
    expect(result.stderr.trim().split("\n")).toEqual([
      expect.stringMatching(new RegExp(`^conclave viewer: cannot reach NATS at ${url} `)),
    ]);
  });

  it("refuses a --traces-url that is not an http(s) URL with {session} and {turn}, in one line", async () => {
    for (const bad of ["ftp://traces/{session}/{turn}", "http://127.0.0.1:16686/search?tags={session}"]) {
      const result = await runConclave(nats.url, ["viewer", "--port", "0", "--traces-url", bad]);
      expect(result.code, bad).toBe(2);
      expect(result.stderr.trim().split("\n"), bad).toEqual([
        expect.stringContaining("--traces-url must be an http(s) URL, with {session} and {turn}"),
      ]);
    }
  });

  it("once connected, rides out a NATS restart and reads the log again", async () => {
    // The event log's streams, as a runner makes them.
    await ensureEventStreams(await jetstreamManager(await nats.connect("runner")));
    const port = await freePort();
    const viewer = await processes.spawn("viewer", ["viewer", "--port", String(port)]);
    const log = () => fetch(`http://127.0.0.1:${port}/log.json?session=restart&turn=1`).then((r) => r.status);
    expect(await log()).toBe(200);
    // Down for longer than a one-shot command's few reconnection attempts.
    await nats.restart(4_000);
    await until(async () => (await log()) === 200, {
      timeoutMs: 20_000,
      everyMs: 200,
      what: "the viewer reads the log again",
    });
    expect(viewer.child.exitCode).toBeNull();
  });
});
