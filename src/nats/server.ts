import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { delimiter, join, resolve } from "node:path";
import { withDeadline } from "../deadline.ts";
import { ConclaveError } from "../errors.ts";

/** Raised when nats-server is not installed; the message says how to install it. */
export class NatsServerNotFoundError extends ConclaveError<"nats_server_not_found"> {
  constructor() {
    super(
      "nats_server_not_found",
      "nats-server was not found on PATH (nor in /usr/sbin, /usr/local/bin). Run `npm run setup`, or install it: `apt-get install nats-server`.",
    );
  }
}

export function findNatsServer(env = process.env): string | null {
  const dirs = [...(env.PATH ?? "").split(delimiter), "/usr/sbin", "/usr/local/sbin", "/usr/local/bin", "/usr/bin"];
  for (const dir of dirs) {
    const candidate = join(dir, "nats-server");
    if (dir && existsSync(candidate)) return candidate;
  }
  return null;
}

/** A free TCP port on loopback, chosen by the OS. */
export function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.unref();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() =>
        typeof address === "object" && address ? resolvePort(address.port) : reject(new Error("no port")),
      );
    });
  });
}

export interface NatsServerOptions {
  /** Config file. Default: the repo's nats.conf. Its `listen` is overridden: 127.0.0.1 and `port`. */
  config?: string;
  /**
   * The config requires TLS (e.g. deploy/nats.production.conf): the returned
   * URL is `tls://…`, so clients require TLS too. Default: false.
   */
  tls?: boolean;
  /** Environment of nats-server, for `$VARIABLES` in the config. Default: this process's. */
  env?: NodeJS.ProcessEnv;
  /** Port; default: a free one. */
  port?: number;
  /** JetStream store directory; default: a new temporary directory, removed on stop. */
  storeDir?: string;
  /** How long to wait for the server to come up. Default 10 s. */
  readyTimeoutMs?: number;
  /**
   * Its own process group, killed when this process exits: a terminal's Ctrl-C then reaches only
   * this process, which stops the server last, after the processes using it. Default: false.
   */
  detached?: boolean;
}

export interface RunningNatsServer {
  url: string;
  port: number;
  storeDir: string;
  process: ChildProcess;
  /** Stops the server (SIGTERM, then SIGKILL) and removes a temporary store. */
  stop(): Promise<void>;
}

export const REPO_ROOT = resolve(import.meta.dirname, "..", "..");
export const DEFAULT_NATS_CONFIG = join(REPO_ROOT, "nats.conf");

/** Starts nats-server bound to 127.0.0.1 and resolves once it accepts clients. */
export async function startNatsServer(options: NatsServerOptions = {}): Promise<RunningNatsServer> {
  const binary = findNatsServer();
  if (!binary) throw new NatsServerNotFoundError();
  const port = options.port ?? (await freePort());
  const temporary = options.storeDir === undefined;
  const storeDir = options.storeDir ?? mkdtempSync(join(tmpdir(), "conclave-nats-"));
  mkdirSync(storeDir, { recursive: true });
  const child = spawn(
    binary,
    ["-c", options.config ?? DEFAULT_NATS_CONFIG, "-a", "127.0.0.1", "-p", String(port), "-sd", storeDir],
    {
      stdio: ["ignore", "ignore", "pipe"],
      env: options.env ?? process.env,
      detached: options.detached ?? false,
    },
  );
  if (options.detached) {
    const killOnExit = () => child.kill("SIGKILL");
    process.once("exit", killOnExit);
    child.once("exit", () => process.removeListener("exit", killOnExit));
  }
  let output = "";
  const readyTimeoutMs = options.readyTimeoutMs ?? 10_000;
  await withDeadline(
    readyTimeoutMs,
    () =>
      new Promise<void>((ready, fail) => {
        child.stderr!.on("data", (chunk: Buffer) => {
          output += chunk.toString();
          if (output.includes("Server is ready")) ready();
        });
        child.once("exit", (code) => fail(new Error(`nats-server exited with code ${code}:\n${output}`)));
      }),
    () => new Error(`nats-server did not start within ${readyTimeoutMs} ms:\n${output}`),
  );
  child.stderr!.resume();
  const exited = new Promise<void>((done) => child.once("exit", () => done()));
  return {
    url: `${options.tls ? "tls" : "nats"}://127.0.0.1:${port}`,
    port,
    storeDir,
    process: child,
    stop: async () => {
      if (child.exitCode === null) {
        child.kill("SIGTERM");
        const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
        await exited;
        clearTimeout(timer);
      }
      if (temporary) rmSync(storeDir, { recursive: true, force: true });
    },
  };
}
