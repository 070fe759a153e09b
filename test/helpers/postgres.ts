import { afterAll, beforeAll } from "vitest";
import { type PostgresServer, startPostgresServer } from "./postgresServer.ts";

// The server itself (find the binaries, initdb, start, stop) lives in postgresServer.ts, shared with the bench.
export { findPostgresBin, POSTGRES_TEST_USER } from "./postgresServer.ts";

/**
 * Starts a private PostgreSQL for the current test file: a new cluster
 * (initdb, user `conclave`, trust authentication) in a temporary directory,
 * listening on a free loopback port with its socket in that directory; stops
 * it and deletes the directory after.
 */
export function usePostgresServer() {
  let server: PostgresServer | undefined;

  beforeAll(async () => {
    server = await startPostgresServer();
  });
  afterAll(async () => {
    await server?.destroy();
  });

  const started = (): PostgresServer => {
    if (!server) throw new Error("PostgreSQL not started yet");
    return server;
  };
  return {
    /** `postgres://conclave@127.0.0.1:<port>/postgres` */
    get url(): string {
      return started().url;
    },
    get port(): number {
      return server?.port ?? 0;
    },
    /** Stops the server (fast shutdown); its data stays for `restart()`. */
    stop: () => started().stop(),
    /** Stops the server and starts it again on the same port with the same data. */
    async restart(): Promise<void> {
      await started().stop();
      await started().start();
    },
  };
}
