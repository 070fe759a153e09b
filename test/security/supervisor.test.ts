import { spawn } from "node:child_process";
import { afterEach, describe, expect, it } from "vitest";
import type { ConclaveProcess } from "../../src/cli/childProcess.ts";
import { type SupervisedProcess, supervise } from "../../src/cli/supervisor.ts";

/** A child that says it is ready, then exits at once with code 3: what a process crashing on every input looks like. */
function crashingChild(name: string): ConclaveProcess {
  const child = spawn(process.execPath, ["-e", "process.send({ type: 'ready' }, () => process.exit(3))"], {
    stdio: ["ignore", "ignore", "inherit", "ipc"],
  });
  const exited = new Promise<void>((done) => child.once("exit", () => done()));
  const ready = new Promise<void>((resolve, reject) => {
    child.on("message", () => resolve());
    child.once("exit", () => reject(new Error(`${name} exited`)));
  });
  ready.catch(() => {});
  return {
    name,
    child,
    ready,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      await exited;
    },
  };
}

let supervised: SupervisedProcess | undefined;
afterEach(async () => {
  await supervised?.stop(1_000);
});

describe("the supervisor", () => {
  it("never gives up on a child that keeps dying: it backs off to its cap, says so, and keeps restarting", async () => {
    const lines: string[] = [];
    const RESTARTS = 12;
    let reached: () => void = () => {};
    const enough = new Promise<void>((resolve) => {
      reached = resolve;
    });
    supervised = supervise("crasher", [], process.env, {
      backoffMs: 2,
      maxBackoffMs: 20,
      spawn: (name) => crashingChild(name),
      log: (line) => {
        lines.push(line);
        if (lines.filter((l) => l.includes("exited")).length >= RESTARTS) reached();
      },
    });
    await enough;
    // Far more than the five restarts a minute after which it used to leave the process down.
    expect(supervised.restarts).toBeGreaterThanOrEqual(RESTARTS);
    expect(lines.some((line) => /giving up/.test(line))).toBe(false);
    const long = lines.filter((line) => line.includes("in long backoff"));
    expect(long.length).toBeGreaterThan(0);
    expect(long.at(-1)).toMatch(/restarting in 20 ms and still trying/);
    expect(lines.some((line) => /crasher exited \(code 3\): restarting in 2 ms \(restart 1\)/.test(line))).toBe(true);
  });
});
