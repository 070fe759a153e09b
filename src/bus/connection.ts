import type { NatsConnection } from "@nats-io/nats-core";
import { connect } from "@nats-io/transport-node";

/** Who a process is on the bus: nats.conf gives each role its own user. */
export type Role = "client" | "runner" | "worker" | "observer";

/**
 * Development credentials, matching the users in the repo's nats.conf. They
 * exist so `npm start` works out of the box; set CONCLAVE_NATS_USER and
 * CONCLAVE_NATS_PASSWORD (and your own nats.conf) anywhere else.
 */
export const DEV_CREDENTIALS: Record<Role, { user: string; password: string }> = {
  client: { user: "client", password: "conclave-dev-client" },
  runner: { user: "runner", password: "conclave-dev-runner" },
  worker: { user: "worker", password: "conclave-dev-worker" },
  observer: { user: "observer", password: "conclave-dev-observer" },
};

export const DEFAULT_NATS_URL = "nats://127.0.0.1:4222";

export interface BusOptions {
  /** Server URL(s), comma-separated. Default: $CONCLAVE_NATS_URL, else nats://127.0.0.1:4222. */
  url: string;
  user: string;
  password: string;
  /** Connection name shown by the server's monitoring, e.g. `conclave-runner:1234`. */
  name: string;
  /**
   * Long-lived processes (runner, workers) wait for the server and reconnect
   * forever; one-shot commands fail fast. Default: false.
   */
  persistent: boolean;
}

/** Connection options from flags, then environment, then the role's development defaults. */
export function busOptions(role: Role, overrides: Partial<BusOptions> = {}, env = process.env): BusOptions {
  const dev = DEV_CREDENTIALS[role];
  return {
    url: overrides.url ?? env.CONCLAVE_NATS_URL ?? DEFAULT_NATS_URL,
    user: overrides.user ?? env.CONCLAVE_NATS_USER ?? dev.user,
    password: overrides.password ?? env.CONCLAVE_NATS_PASSWORD ?? dev.password,
    name: overrides.name ?? `conclave-${role}:${process.pid}`,
    persistent: overrides.persistent ?? false,
  };
}

export async function connectBus(options: BusOptions): Promise<NatsConnection> {
  return connect({
    servers: options.url.split(",").map((url) => url.trim()),
    user: options.user,
    pass: options.password,
    name: options.name,
    // The client's default gives up after ~20 s of outage; a runtime must not.
    maxReconnectAttempts: options.persistent ? -1 : 10,
    waitOnFirstConnect: options.persistent,
    reconnectTimeWait: 250,
    timeout: 5_000,
  });
}
