import { execFile, execFileSync } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { promisify } from "node:util";
import { freePort } from "../../src/nats/server.ts";

/**
 * A private PostgreSQL server on a free loopback port with a temporary data
 * directory: the test suite's (test/helpers/postgres.ts wraps it in
 * beforeAll/afterAll) and the bench's (LangGraph.js + PostgresSaver). No
 * vitest here, so both can import it.
 */

const run = promisify(execFile);

/** The user name the cluster is created with (trust authentication, no password). */
export const POSTGRES_TEST_USER = "conclave";

/**
 * The directory holding both initdb and pg_ctl: PATH first, then
 * /usr/lib/postgresql/<version>/bin, newest version first (where Debian puts
 * them, off PATH). A one-line error naming `npm run setup` when there is none.
 */
export function findPostgresBin(env = process.env): string {
  const debian = "/usr/lib/postgresql";
  const versions = existsSync(debian)
    ? readdirSync(debian)
        .filter((name) => /^\d+(\.\d+)?$/.test(name))
        .sort((a, b) => Number(b) - Number(a))
        .map((version) => join(debian, version, "bin"))
    : [];
  for (const dir of [...(env.PATH ?? "").split(delimiter), ...versions, "/usr/local/bin"]) {
    if (dir && existsSync(join(dir, "initdb")) && existsSync(join(dir, "pg_ctl"))) return dir;
  }
  throw new Error(
    "PostgreSQL's initdb and pg_ctl were not found on PATH nor in /usr/lib/postgresql/*/bin: run `npm run setup`",
  );
}

/**
 * Who runs the server: PostgreSQL refuses to run as root, so as root it is an
 * unprivileged account (`postgres` when the package created it, else `nobody`)
 * through runuser; otherwise the current user.
 */
function serverAccount(): { uid: number; gid: number; prefix: string[] } | null {
  if (process.getuid?.() !== 0) return null;
  for (const name of ["postgres", "nobody"]) {
    try {
      const uid = Number(execFileSync("id", ["-u", name]).toString().trim());
      const gid = Number(execFileSync("id", ["-g", name]).toString().trim());
      return { uid, gid, prefix: ["runuser", "-u", name, "--"] };
    } catch {
      // no such account: try the next
    }
  }
  throw new Error("running as root, and neither a postgres nor a nobody account exists to run PostgreSQL as");
}

/** Options of {@link startPostgresServer}. */
export interface PostgresServerOptions {
  /** Prefix of the temporary directory's name. */
  prefix?: string;
  /** Server settings passed as `-c name=value` (default: `fsync=off`). */
  settings?: Record<string, string>;
}

/** A running private PostgreSQL (see {@link startPostgresServer}). */
export interface PostgresServer {
  /** `postgres://conclave@127.0.0.1:<port>/postgres` */
  readonly url: string;
  readonly port: number;
  /** The directory holding the data directory, the socket and the log. */
  readonly dir: string;
  /** The postmaster's pid (every backend is its child), or undefined while stopped. */
  postmasterPid(): number | undefined;
  /** Stops the server (fast shutdown); its data stays for `start()`. */
  stop(): Promise<void>;
  /** Starts the stopped server again on the same port with the same data. */
  start(): Promise<void>;
  /** Stops the server and deletes its directory. */
  destroy(): Promise<void>;
}

/**
 * Starts a private PostgreSQL: a new cluster (initdb, user `conclave`, trust
 * authentication) in a temporary directory, listening on a free loopback port
 * with its socket in that directory. fsync is off by default: the cluster only
 * has to outlive a clean restart, not a power cut.
 */
export async function startPostgresServer(options: PostgresServerOptions = {}): Promise<PostgresServer> {
  const bin = findPostgresBin();
  const account = serverAccount();
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), options.prefix ?? "conclave-test-postgres-"));
  if (account) chownSync(dir, account.uid, account.gid);
  const dataDir = join(dir, "data");
  const logFile = join(dir, "postgres.log");
  const settings = options.settings ?? { fsync: "off" };
  let running = false;

  /** Runs a PostgreSQL program as the server's account, from the cluster's directory (which that account can read). */
  async function pg(program: string, args: string[]): Promise<void> {
    const [command, ...rest] = [...(account?.prefix ?? []), join(bin, program), ...args];
    try {
      await run(command!, rest, { cwd: dir, timeout: 60_000 });
    } catch (error) {
      const output = error instanceof Error && "stderr" in error ? String(error.stderr) : String(error);
      const log = existsSync(logFile) ? readFileSync(logFile, "utf8").slice(-2_000) : "";
      throw new Error(`${program} ${args.at(-1)} failed: ${output.trim()}${log ? `\nserver log:\n${log}` : ""}`);
    }
  }

  async function start(): Promise<void> {
    const flags = Object.entries(settings).map(([name, value]) => `-c ${name}=${value}`);
    const serverOptions = [`-p ${port}`, `-k ${dir}`, "-c listen_addresses=127.0.0.1", ...flags].join(" ");
    // -w: pg_ctl returns once the server accepts connections.
    await pg("pg_ctl", ["-D", dataDir, "-l", logFile, "-o", serverOptions, "-w", "-t", "30", "start"]);
    running = true;
  }

  async function stop(): Promise<void> {
    if (!running) return;
    running = false;
    await pg("pg_ctl", ["-D", dataDir, "-m", "fast", "-w", "-t", "30", "stop"]);
  }

  try {
    await pg("initdb", [
      "-D",
      dataDir,
      "-U",
      POSTGRES_TEST_USER,
      "--auth=trust",
      "--encoding=UTF8",
      "--locale=C",
      "--no-sync",
      "--no-instructions",
    ]);
    await start();
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  return {
    url: `postgres://${POSTGRES_TEST_USER}@127.0.0.1:${port}/postgres`,
    port,
    dir,
    postmasterPid: () => {
      if (!running) return undefined;
      try {
        // postmaster.pid's first line is the postmaster's pid.
        const pid = Number(readFileSync(join(dataDir, "postmaster.pid"), "utf8").split("\n")[0]);
        return Number.isInteger(pid) && pid > 0 ? pid : undefined;
      } catch {
        return undefined;
      }
    },
    stop,
    start,
    destroy: async () => {
      await stop().catch(() => {});
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
