import { type ChildProcess, spawn } from "node:child_process";
import { CONCLAVE_BIN, type ConclaveProcess } from "../src/cli/childProcess.ts";
import { UnavailableError } from "../src/cli/failures.ts";
import { withDeadline } from "../src/deadline.ts";

/** Told each line a process writes on stderr (its pino JSON log lines), with the process's name. */
export type LogLineListener = (process: string, line: string) => void;

/**
 * `spawnConclave`, but with stderr read by the bench: each line goes to
 * `onLine` and on to the bench's own stderr, as an inherited stderr would.
 * `spawnConclave` inherits stderr, so a process's log cannot be counted from
 * outside it (e.g. the runner's "liveness lease lapsed" warnings).
 */
export function spawnLogged(
  name: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  onLine: LogLineListener,
  readyTimeoutMs = 20_000,
): ConclaveProcess {
  const child = spawn(process.execPath, [CONCLAVE_BIN, ...args], {
    stdio: ["ignore", "inherit", "pipe", "ipc"],
    env,
    detached: true,
  });
  const killOnExit = () => child.kill("SIGKILL");
  process.once("exit", killOnExit);
  child.once("exit", () => process.removeListener("exit", killOnExit));
  readLines(child, (line) => {
    onLine(name, line);
    process.stderr.write(`${line}\n`);
  });
  const exited = new Promise<void>((done) => child.once("exit", () => done()));
  const ready = withDeadline(
    readyTimeoutMs,
    () =>
      new Promise<void>((resolve, reject) => {
        child.on("message", (message: { type?: string }) => {
          if (message?.type === "ready") resolve();
        });
        child.once("exit", (code, signal) =>
          reject(new UnavailableError(`${name} exited before it was ready (${signal ?? `code ${code}`})`)),
        );
      }),
    () => new UnavailableError(`${name} did not become ready within ${readyTimeoutMs} ms`),
  );
  ready.catch(() => {});
  return {
    name,
    child,
    ready,
    stop: async (graceMs = 10_000) => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** Whole lines of a child's stderr, the last one flushed when it closes. */
function readLines(child: ChildProcess, onLine: (line: string) => void): void {
  let pending = "";
  child.stderr?.setEncoding("utf8");
  child.stderr?.on("data", (chunk: string) => {
    const lines = (pending + chunk).split("\n");
    pending = lines.pop() ?? "";
    for (const line of lines) if (line.length > 0) onLine(line);
  });
  child.stderr?.on("end", () => {
    if (pending.length > 0) onLine(pending);
    pending = "";
  });
}

/** The runner's warning when its liveness lease lapsed (src/runtime/runner/liveness.ts). */
const LEASE_LAPSED = /liveness lease lapsed/;
/** A worker's warning when a model call could not reach the model server (the `openai` client's APIConnectionError). */
const MODEL_CONNECTION_ERROR = /Connection error/;

/**
 * Counts, as a LogLineListener, the runners' "liveness lease lapsed" lines and the
 * workers' model connection errors (failures of the bench's model server, not of the runtime).
 */
export class LeaseLapses {
  #count = 0;
  #modelErrors = 0;
  readonly listener: LogLineListener = (process, line) => {
    if (process.startsWith("runner") && LEASE_LAPSED.test(line)) this.#count++;
    else if (process.startsWith("worker") && MODEL_CONNECTION_ERROR.test(line)) this.#modelErrors++;
  };
  get count(): number {
    return this.#count;
  }
  get modelErrors(): number {
    return this.#modelErrors;
  }
}
