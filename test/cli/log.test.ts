import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { CONCLAVE_BIN } from "../../src/cli/childProcess.ts";
import { createLogger, logLevelFrom } from "../../src/telemetry/log.ts";
import { useNatsServer } from "../helpers/nats.ts";

const nats = useNatsServer();

/** A destination that keeps every line written to it, parsed. */
function collector() {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split("\n").filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  return { lines, stream };
}

describe("process logs", () => {
  it("are JSON lines with the role, pid, level, a child's bindings and structured fields", () => {
    const { lines, stream } = collector();
    const log = createLogger("runner", { destination: stream, env: {} });
    log.info("serving");
    log.child({ session_id: "s1", turn_id: 3 }).warn("slow stage", { stage: "council", elapsed_ms: 900 });
    log.debug("not at the default level");
    expect(lines).toEqual([
      expect.objectContaining({ level: "info", role: "runner", pid: process.pid, msg: "serving" }),
      expect.objectContaining({
        level: "warn",
        role: "runner",
        session_id: "s1",
        turn_id: 3,
        stage: "council",
        elapsed_ms: 900,
        msg: "slow stage",
      }),
    ]);
    expect(typeof lines[0]?.time).toBe("string");
  });

  it("take their level from CONCLAVE_LOG; quiet keeps warnings and errors", () => {
    expect(logLevelFrom({})).toBe("info");
    expect(logLevelFrom({ CONCLAVE_LOG: "quiet" })).toBe("warn");
    expect(logLevelFrom({ CONCLAVE_LOG: "DEBUG" })).toBe("debug");
    const { lines, stream } = collector();
    const log = createLogger("worker", { destination: stream, env: { CONCLAVE_LOG: "quiet" } });
    log.info("dropped");
    log.warn("kept");
    log.error("kept too");
    expect(lines.map((line) => [line.level, line.msg])).toEqual([
      ["warn", "kept"],
      ["error", "kept too"],
    ]);
  });

  it("of a runner process go to stderr as JSON lines, stdout untouched", async () => {
    const child = spawn(process.execPath, [CONCLAVE_BIN, "runner"], {
      env: { ...process.env, CONCLAVE_NATS_URL: nats.url, CONCLAVE_LOG: "info" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    child.stdout.on("data", (chunk) => {
      stdout += String(chunk);
    });
    try {
      // Every line is JSON, up to the one that says the runner serves (its model, then its WAL partitions, come first).
      const lines: unknown[] = [];
      for await (const line of createInterface({ input: child.stderr })) {
        lines.push(JSON.parse(line));
        if (/^serving turns/.test((lines.at(-1) as { msg?: string }).msg ?? "")) break;
      }
      expect(lines.at(-1)).toMatchObject({
        level: "info",
        role: "runner",
        pid: child.pid,
        msg: expect.stringMatching(/^serving turns/),
      });
      expect(lines[0]).toMatchObject({ level: "info", role: "runner", msg: expect.stringMatching(/^model: /) });
      expect(lines[1]).toMatchObject({
        level: "info",
        role: "runner",
        msg: expect.stringMatching(/owns WAL partitions/),
      });
    } finally {
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      await exited;
    }
    expect(stdout).toBe("");
  });
});
