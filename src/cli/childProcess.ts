import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { withDeadline } from "../deadline.ts";
import { UnavailableError } from "./failures.ts";

/**
 * The script `node` runs for a `conclave` subprocess of this same code: from the TypeScript
 * sources (tsx, vitest) the development launcher, which runs the sources through tsx, so
 * tests and `conclave up` never start a stale dist/; from the compiled package, the compiled
 * CLI next to this module (no tsx).
 */
export const CONCLAVE_BIN = fileURLToPath(
  import.meta.url.endsWith(".ts")
    ? new URL("../../scripts/conclave-dev.mjs", import.meta.url)
    : new URL("main.js", import.meta.url),
);

/** What a `conclave` subprocess said with its `ready` message, besides its type (see {@link announceReady}). */
export type ReadyDetail = Record<string, unknown>;

/** A `conclave` subprocess that reports `{ type: "ready" }` over IPC once it serves. */
export interface ConclaveProcess {
  name: string;
  child: ChildProcess;
  ready: Promise<void>;
  /** What its ready message carried besides the type, once it serves (a child started by {@link superviseConclave}). */
  announced?: Promise<ReadyDetail>;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves when it has exited. */
  stop(graceMs?: number): Promise<void>;
}

/**
 * Sent by a long-lived command to its parent once it is serving; `detail` rides along (a worker
 * names the agents it hosts, which `conclave dev` reports on a reload).
 */
export function announceReady(detail: Record<string, unknown> = {}): void {
  process.send?.({ ...detail, type: "ready" });
}

/**
 * Starts `conclave <args>` as a child with an IPC channel. Its output goes to this process's,
 * except stderr with `stderr: "pipe"`: the caller reads `child.stderr` (conclave dev keeps a
 * reloading worker's failure to its one line).
 */
export function spawnConclave(
  name: string,
  args: string[],
  env: NodeJS.ProcessEnv = process.env,
  readyTimeoutMs = 20_000,
  { stderr = "inherit" }: { stderr?: "inherit" | "pipe" } = {},
): ConclaveProcess {
  // Its own process group: a terminal's Ctrl-C reaches only the parent, which stops
  // the children in order (runner first); the parent's exit still takes them down.
  const child = spawn(process.execPath, [CONCLAVE_BIN, ...args], {
    stdio: ["ignore", "inherit", stderr, "ipc"],
    env,
    detached: true,
  });
  return superviseConclave(name, child, readyTimeoutMs);
}

/**
 * A started `conclave` child as a {@link ConclaveProcess}: killed if this process exits first,
 * `ready` once it says so over IPC (an UnavailableError if it exits before, or takes longer than
 * `readyTimeoutMs`), and `stop` as SIGTERM then SIGKILL. For a child started with an IPC channel.
 */
export function superviseConclave(name: string, child: ChildProcess, readyTimeoutMs = 20_000): ConclaveProcess {
  const killOnExit = () => child.kill("SIGKILL");
  process.once("exit", killOnExit);
  child.once("exit", () => process.removeListener("exit", killOnExit));
  const exited = new Promise<void>((done) => child.once("exit", () => done()));
  const announced = withDeadline(
    readyTimeoutMs,
    () =>
      new Promise<ReadyDetail>((resolve, reject) => {
        child.on("message", (message: { type?: string }) => {
          if (message?.type !== "ready") return;
          const { type: _type, ...detail } = message;
          resolve(detail);
        });
        child.once("exit", (code, signal) =>
          reject(new UnavailableError(`${name} exited before it was ready (${signal ?? `code ${code}`})`)),
        );
      }),
    () => new UnavailableError(`${name} did not become ready within ${readyTimeoutMs} ms`),
  );
  announced.catch(() => {});
  const ready = announced.then(() => {});
  ready.catch(() => {});
  return {
    name,
    child,
    ready,
    announced,
    stop: async (graceMs = 10_000) => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
      await exited;
      clearTimeout(timer);
    },
  };
}
