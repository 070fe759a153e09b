import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { createClient } from "redis";
import { afterAll, beforeAll } from "vitest";
import { freePort } from "../../src/nats/server.ts";
import { sleep } from "./wait.ts";

/** How long redis-server gets to accept connections. */
const READY_TIMEOUT_MS = 10_000;

/** redis-server on PATH or where Debian puts it; a one-line error naming `npm run setup` when missing. */
export function findRedisServer(env = process.env): string {
  for (const dir of [...(env.PATH ?? "").split(delimiter), "/usr/bin", "/usr/sbin", "/usr/local/bin"]) {
    if (dir && existsSync(join(dir, "redis-server"))) return join(dir, "redis-server");
  }
  throw new Error("redis-server was not found on PATH (nor in /usr/bin, /usr/local/bin): run `npm run setup`");
}

/**
 * Starts a private redis-server for the current test file, on a free loopback
 * port with its own temporary directory, and stops it (and deletes the
 * directory) after. Append-only persistence is on, so `restart()` keeps the data.
 */
export function useRedisServer() {
  let port = 0;
  let dir = "";
  let child: ChildProcess | undefined;

  async function start(): Promise<void> {
    const binary = findRedisServer();
    const server = spawn(
      binary,
      ["--port", String(port), "--bind", "127.0.0.1", "--dir", dir, "--save", "", "--appendonly", "yes"],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    let output = "";
    const collect = (chunk: Buffer) => {
      output = (output + chunk.toString()).slice(-4_000);
    };
    server.stdout!.on("data", collect);
    server.stderr!.on("data", collect);
    child = server;
    const deadline = Date.now() + READY_TIMEOUT_MS;
    // Ready when it answers a PING: polled, since it only listens once its data is loaded.
    while (!(await answersPing(port))) {
      if (server.exitCode !== null || server.signalCode !== null) {
        throw new Error(`redis-server exited (${server.exitCode ?? server.signalCode}) on port ${port}: ${output}`);
      }
      if (Date.now() > deadline) {
        throw new Error(`redis-server did not answer PING within ${READY_TIMEOUT_MS} ms: ${output}`);
      }
      await sleep(25);
    }
  }

  async function stop(): Promise<void> {
    const running = child;
    child = undefined;
    if (!running || running.exitCode !== null || running.signalCode !== null) return;
    const exited = new Promise<void>((done) => running.once("exit", () => done()));
    // SIGTERM: redis flushes its append-only file and exits.
    running.kill("SIGTERM");
    const timer = setTimeout(() => running.kill("SIGKILL"), 5_000);
    await exited;
    clearTimeout(timer);
  }

  beforeAll(async () => {
    port = await freePort();
    dir = mkdtempSync(join(tmpdir(), "conclave-test-redis-"));
    await start();
  });
  afterAll(async () => {
    await stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  return {
    /** `redis://127.0.0.1:<port>` */
    get url(): string {
      if (!port) throw new Error("redis-server not started yet");
      return `redis://127.0.0.1:${port}`;
    },
    get port(): number {
      return port;
    },
    /** Stops redis-server (SIGTERM); its data stays for `restart()`. */
    stop,
    /** Stops redis-server and starts it again on the same port with the same data. */
    async restart(): Promise<void> {
      await stop();
      await start();
    },
  };
}

/** True when a Redis on `port` answers PING; one attempt, no retries. */
async function answersPing(port: number): Promise<boolean> {
  const client = createClient({
    url: `redis://127.0.0.1:${port}`,
    socket: { connectTimeout: 1_000, reconnectStrategy: false },
  });
  client.on("error", () => {});
  try {
    await client.connect();
    return (await client.ping()) === "PONG";
  } catch {
    return false;
  } finally {
    if (client.isOpen) client.destroy();
  }
}
