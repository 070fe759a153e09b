import type { NatsConnection } from "@nats-io/nats-core";
import { afterAll, beforeAll } from "vitest";
import { busOptions, connectBus, type Role } from "../../src/bus/connection.ts";
import { type RunningNatsServer, startNatsServer } from "../../src/nats/server.ts";

/**
 * Starts a real nats-server (the repo's nats.conf) on a free port with its own
 * temporary JetStream store for the current test file, and stops it after.
 */
export function useNatsServer() {
  let server: RunningNatsServer | undefined;
  const connections: NatsConnection[] = [];
  beforeAll(async () => {
    server = await startNatsServer();
  });
  afterAll(async () => {
    await Promise.allSettled(connections.map((nc) => nc.close()));
    await server?.stop();
  });
  return {
    get url(): string {
      if (!server) throw new Error("nats-server not started yet");
      return server.url;
    },
    get server(): RunningNatsServer {
      if (!server) throw new Error("nats-server not started yet");
      return server;
    },
    /** A connection as one of the roles in nats.conf, closed after the file's tests. */
    async connect(role: Role): Promise<NatsConnection> {
      const nc = await connectBus(busOptions(role, { url: this.url, persistent: false }));
      connections.push(nc);
      return nc;
    },
  };
}
