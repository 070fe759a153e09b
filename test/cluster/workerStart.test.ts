/**
 * A worker started while its cluster has no JetStream quorum (two of three
 * nodes down, as just after a heal or a restart) waits for the election and
 * then serves, instead of exiting with "JetStream system temporarily
 * unavailable" (issue 34's leftover).
 */
import { describe, expect, it } from "vitest";
import { builtinAgents } from "../../src/agents/builtins.ts";
import { subjects } from "../../src/bus/subjects.ts";
import { startWorker } from "../../src/workers/startWorker.ts";
import { useNatsCluster } from "../helpers/natsCluster.ts";

const nats = useNatsCluster(3);

/** A logger that keeps its lines and tells when a line matching `pattern` is written. */
function recordingLogger() {
  const lines: string[] = [];
  const waiting: { pattern: RegExp; resolve: (line: string) => void }[] = [];
  const write = (level: string) => (message: string) => {
    const line = `${level}: ${message}`;
    lines.push(line);
    for (const wait of waiting.filter((w) => w.pattern.test(line))) {
      waiting.splice(waiting.indexOf(wait), 1);
      wait.resolve(line);
    }
  };
  const log = {
    debug: write("debug"),
    info: write("info"),
    warn: write("warn"),
    error: write("error"),
    child: () => log,
  };
  return {
    log,
    lines,
    written: (pattern: RegExp) =>
      new Promise<string>((resolve) => {
        const line = lines.find((l) => pattern.test(l));
        if (line) resolve(line);
        else waiting.push({ pattern, resolve });
      }),
  };
}

describe("a worker started without a JetStream quorum", () => {
  it("waits for the election, says so in one line, then serves", async () => {
    await nats.node(1).kill();
    await nats.node(2).kill();
    const recorder = recordingLogger();
    const starting = startWorker({
      connection: { servers: nats.node(0).url },
      agents: builtinAgents("reasoning.*"),
      services: ["memory"],
      llm: false,
      log: recorder.log,
    });
    const failed = starting.then(
      () => null,
      (error: unknown) => error,
    );
    // It is waiting (not failed) while the quorum is missing.
    const waiting = await Promise.race([recorder.written(/^warn: JetStream is not ready/), failed]);
    expect(typeof waiting, `the worker failed instead of waiting: ${String(waiting)}`).toBe("string");
    expect(waiting).toMatch(/trying again for up to 60 s$/);

    await Promise.all([nats.node(1).start(), nats.node(2).start()]);
    const worker = await starting;
    try {
      expect(recorder.lines.filter((line) => line.startsWith("warn: JetStream is not ready"))).toHaveLength(1);
      expect(recorder.lines.some((line) => /^info: JetStream ready: the worker started after \d+ ms$/.test(line))).toBe(
        true,
      );
      expect(worker.services).toEqual(["memory"]);
      // Its memory service answers a runner's search.
      const nc = await nats.connect("runner", 0);
      const reply = await nc.request(
        subjects.memoryQuery,
        JSON.stringify({ session_id: "worker-start", query: "anything", limit: 3 }),
        { timeout: 10_000 },
      );
      expect(reply.json()).toEqual({ items: [] });
    } finally {
      await worker.stop();
    }
  }, 120_000);
});
