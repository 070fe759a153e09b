import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { NatsConnection } from "@nats-io/nats-core";
import { afterAll, beforeAll } from "vitest";
import { busOptions, connectBus, type Role } from "../../src/bus/connection.ts";
import { DEFAULT_NATS_CONFIG, freePort, type RunningNatsServer, startNatsServer } from "../../src/nats/server.ts";
import { sleep } from "./wait.ts";

/**
 * Starts a real nats-server (the repo's nats.conf) on a free port with its own
 * temporary JetStream store for the current test file, and stops it after.
 * `editConfig` changes the configuration first (e.g. a permission an older version granted).
 */
export function useNatsServer(options: { editConfig?: (config: string) => string } = {}) {
  let server: RunningNatsServer | undefined;
  let port = 0;
  let storeDir = "";
  let config: string | undefined;
  const connections: NatsConnection[] = [];
  beforeAll(async () => {
    port = await freePort();
    storeDir = mkdtempSync(join(tmpdir(), "conclave-test-nats-"));
    if (options.editConfig) {
      config = join(storeDir, "nats.conf");
      writeFileSync(config, options.editConfig(readFileSync(DEFAULT_NATS_CONFIG, "utf8")));
    }
    server = await startNatsServer({ port, storeDir, ...(config ? { config } : {}) });
  });
  afterAll(async () => {
    await Promise.allSettled(connections.map((nc) => nc.close()));
    await server?.stop();
    rmSync(storeDir, { recursive: true, force: true });
  });
  return {
    get url(): string {
      if (!server) throw new Error("nats-server not started yet");
      return server.url;
    },
    /** The server's JetStream store directory (its block files), e.g. to read them as bytes. */
    get storeDir(): string {
      if (!storeDir) throw new Error("nats-server not started yet");
      return storeDir;
    },
    get server(): RunningNatsServer {
      if (!server) throw new Error("nats-server not started yet");
      return server;
    },
    /** Stops nats-server (SIGTERM) and starts it again on the same port with the same store. */
    async restart(downMs = 0): Promise<void> {
      await server?.stop();
      await sleep(downMs); // the outage itself
      server = await startNatsServer({ port, storeDir, ...(config ? { config } : {}) });
    },
    /** A connection as one of the roles in nats.conf, closed after the file's tests. */
    async connect(role: Role): Promise<NatsConnection> {
      const nc = await connectBus(busOptions(role, { servers: this.url, persistent: false }));
      connections.push(nc);
      return nc;
    },
  };
}
