import type { NatsConnection } from "@nats-io/nats-core";
import { connect } from "@nats-io/transport-node";
import { ConclaveError } from "../errors.ts";

/** Who a process is on the bus: nats.conf gives each role its own user and permissions. */
export type Role = "client" | "runner" | "worker" | "observer";

export const ROLES: readonly Role[] = ["client", "runner", "worker", "observer"];

/**
 * Development credentials, matching the users in the repo's nats.conf. They
 * exist so `npm start` works out of the box; set CONCLAVE_NATS_USER and
 * CONCLAVE_NATS_PASSWORD (and your own nats.conf) anywhere else. With
 * CONCLAVE_ENV=production they are refused.
 */
export const DEV_CREDENTIALS: Record<Role, { user: string; password: string }> = {
  client: { user: "client", password: "conclave-dev-client" },
  runner: { user: "runner", password: "conclave-dev-runner" },
  worker: { user: "worker", password: "conclave-dev-worker" },
  observer: { user: "observer", password: "conclave-dev-observer" },
};

/**
 * Each role's inbox prefix: replies to its requests, JetStream acks, KV reads
 * and consumer deliveries arrive under it, and nats.conf lets only that role
 * subscribe there, so no role can read another's replies.
 */
export const INBOX_PREFIXES: Record<Role, string> = {
  client: "_INBOX_client",
  runner: "_INBOX_runner",
  worker: "_INBOX_worker",
  observer: "_INBOX_observer",
};

export const DEFAULT_NATS_URL = "nats://127.0.0.1:4222";

/**
 * Raised, with CONCLAVE_ENV=production, when a process would connect with no
 * credentials of its own or with one of the development passwords.
 */
export class InsecureCredentialsError extends ConclaveError<"insecure_credentials"> {
  constructor(message: string) {
    super("insecure_credentials", message);
  }
}

/** CONCLAVE_ENV=production (any case): development credentials are refused. */
export const isProduction = (env: NodeJS.ProcessEnv = process.env): boolean =>
  (env.CONCLAVE_ENV ?? "").trim().toLowerCase() === "production";

export interface BusOptions {
  /** Server URL(s), comma-separated. Default: $CONCLAVE_NATS_URL, else nats://127.0.0.1:4222. */
  url: string;
  user: string;
  password: string;
  /** Connection name shown by the server's monitoring, e.g. `conclave-runner:1234`. */
  name: string;
  /** Where this connection's replies arrive: the role's prefix (INBOX_PREFIXES). */
  inboxPrefix: string;
  /**
   * Long-lived processes (runner, workers) wait for the server and reconnect
   * forever; one-shot commands fail fast. Default: false.
   */
  persistent: boolean;
}

/** An empty string counts as not given. */
const given = (...values: (string | undefined)[]): string | undefined =>
  values.find((value) => value !== undefined && value !== "");

/**
 * Connection options from flags, then environment, then the role's development
 * defaults. With CONCLAVE_ENV=production there are no defaults: the user and
 * password must be given, and a development password is refused
 * (InsecureCredentialsError).
 */
export function busOptions(role: Role, overrides: Partial<BusOptions> = {}, env = process.env): BusOptions {
  const dev = DEV_CREDENTIALS[role];
  let user = given(overrides.user, env.CONCLAVE_NATS_USER);
  let password = given(overrides.password, env.CONCLAVE_NATS_PASSWORD);
  if (isProduction(env)) {
    const missing = [
      user ? null : "user (CONCLAVE_NATS_USER or --user)",
      password ? null : "password (CONCLAVE_NATS_PASSWORD or --password)",
    ].filter((what) => what !== null);
    if (missing.length > 0) {
      throw new InsecureCredentialsError(
        `CONCLAVE_ENV=production: no NATS ${missing.join(" and ")} for the ${role} role; production has no development defaults`,
      );
    }
    if (Object.values(DEV_CREDENTIALS).some((credentials) => credentials.password === password)) {
      throw new InsecureCredentialsError(
        `CONCLAVE_ENV=production: the NATS password given for the ${role} role is a development default from the repo's nats.conf; use your own nats.conf with your own passwords`,
      );
    }
  }
  user ??= dev.user;
  password ??= dev.password;
  return {
    url: given(overrides.url, env.CONCLAVE_NATS_URL) ?? DEFAULT_NATS_URL,
    user,
    password,
    name: overrides.name ?? `conclave-${role}:${process.pid}`,
    inboxPrefix: overrides.inboxPrefix ?? INBOX_PREFIXES[role],
    persistent: overrides.persistent ?? false,
  };
}

export async function connectBus(options: BusOptions): Promise<NatsConnection> {
  return connect({
    servers: options.url.split(",").map((url) => url.trim()),
    user: options.user,
    pass: options.password,
    name: options.name,
    inboxPrefix: options.inboxPrefix,
    // The client's default gives up after ~20 s of outage; a runtime must not.
    maxReconnectAttempts: options.persistent ? -1 : 10,
    // Capturing a stack for every request cost the runner a third of its CPU (every
    // JetStream publish is a request); our errors carry subject and code instead.
    noAsyncTraces: true,
    waitOnFirstConnect: options.persistent,
    reconnectTimeWait: 250,
    timeout: 5_000,
  });
}
