import { readFileSync } from "node:fs";
import {
  type Authenticator,
  ConnectionError,
  credsAuthenticator,
  type NatsConnection,
  nkeyAuthenticator,
  nkeys,
} from "@nats-io/nats-core";
import { connect } from "@nats-io/transport-node";
import { setting as configSetting, type Env } from "../config/load.ts";
import { CONFIG_SCHEMA } from "../config/schema.ts";
import { ConclaveError, messageOf, singleLine } from "../errors.ts";
import { NatsUnreachableError } from "./errors.ts";

/** Who a process is on the bus: nats.conf gives each role its own user and permissions. */
export type Role = "client" | "runner" | "worker" | "observer";

export const ROLES: readonly Role[] = ["client", "runner", "worker", "observer"];

/**
 * Development credentials, matching the users in the repo's nats.conf. They
 * exist so `npm start` works out of the box; anywhere else give each role its
 * own credentials (docs/production.md). With CONCLAVE_ENV=production they
 * are refused.
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

export const DEFAULT_NATS_URL = CONFIG_SCHEMA.CONCLAVE_NATS_URL.default;

/**
 * Raised, with CONCLAVE_ENV=production, when a process would connect with no
 * credentials of its own, with one of the development passwords, or in clear
 * text (no TLS) to a server that is not on this machine.
 */
export class InsecureCredentialsError extends ConclaveError<"insecure_credentials"> {
  constructor(message: string) {
    super("insecure_credentials", message);
  }
}

/** A connection setting that cannot work: an unknown CONCLAVE_ENV, an unreadable secret file, two ways to log in. */
export class BusConfigError extends ConclaveError<"config"> {
  constructor(message: string) {
    super("config", message);
  }
}

/** The values CONCLAVE_ENV may take (any case); unset means development. */
export const CONCLAVE_ENVS = CONFIG_SCHEMA.CONCLAVE_ENV.schema.out.options;
export type ConclaveEnv = (typeof CONCLAVE_ENVS)[number];

/**
 * CONCLAVE_ENV, checked: `development` (the default when unset or empty) or
 * `production`, in any case. Anything else throws BusConfigError, so a typo
 * such as `prod` never silently means development.
 */
export function conclaveEnv(env: NodeJS.ProcessEnv = process.env): ConclaveEnv {
  return configSetting(env, "CONCLAVE_ENV", { error: busConfigError });
}

const busConfigError = (message: string) => new BusConfigError(message);

/** CONCLAVE_ENV=production (any case): development credentials are refused. Throws on an unknown value. */
export const isProduction = (env: NodeJS.ProcessEnv = process.env): boolean => conclaveEnv(env) === "production";

/** Files for TLS; each is optional (no CA: the system's CAs; no cert and key: no client certificate). */
export interface TlsFiles {
  caFile?: string;
  certFile?: string;
  keyFile?: string;
}

/**
 * Which NATS servers to reach and how to log in, the same for `connect`,
 * `startRunner` and `startWorker`. Every field defaults from the environment
 * (CONCLAVE_NATS_*, see docs/production.md). Log in one way only: a user
 * and password, an nkey seed file, or a creds file.
 */
export interface BusAccess {
  /** Server URL(s): a list, or comma-separated. Default: $CONCLAVE_NATS_URL, else $NATS_URL, else nats://127.0.0.1:4222. */
  servers?: string | string[];
  /** The user, when the role logs in with a password (not with an nkey or a creds file). */
  user?: string;
  /** The user's password. */
  password?: string;
  /** A file holding the role's nkey seed (`SU…`): the server knows the role by its public key. */
  nkeySeedFile?: string;
  /**
   * A `.creds` file (user JWT and seed), for servers run in operator/JWT mode. Default:
   * CONCLAVE_NATS_(<ROLE>_)CREDS_FILE, else NATS_CREDS when no other way to log in is given.
   */
  credsFile?: string;
  /**
   * TLS, required by this side: set when a URL is `tls://` or a CA, certificate
   * or key file is given; the connection then refuses a server without TLS.
   * Unset, the client still upgrades when the server requires TLS.
   */
  tls?: TlsFiles;
}

/** How a process connects to NATS, in one of the roles of nats.conf (see docs/protocol.md, "Credentials"). */
export interface BusOptions extends BusAccess {
  /** Server URL(s): a list, or comma-separated. Default: $CONCLAVE_NATS_URL, else $NATS_URL, else nats://127.0.0.1:4222. */
  servers: string | string[];
  /** Connection name shown by the server's monitoring, e.g. `conclave-runner:1234`. */
  name: string;
  /** Where this connection's replies arrive: the role's prefix (INBOX_PREFIXES). */
  inboxPrefix: string;
  /**
   * Long-lived processes (runner, workers) wait for the server and reconnect
   * forever; one-shot commands fail fast. Default: false.
   */
  persistent: boolean;
  /**
   * How often to try again once connected and then cut off: -1 is forever.
   * Default: forever for a persistent connection, else 10 (about 3 s). A
   * long-lived client (the library's `connect`) fails fast at first but
   * follows its turns across a server restart: -1.
   */
  reconnectAttempts?: number;
}

/** An empty string counts as not given. */
const given = (...values: (string | undefined)[]): string | undefined =>
  values.find((value) => value !== undefined && value !== "");

/** The per-role NATS variables, by the part of their name after CONCLAVE_NATS_. */
type RoleSetting =
  | "USER"
  | "PASSWORD"
  | "PASSWORD_FILE"
  | "NKEY_SEED_FILE"
  | "CREDS_FILE"
  | "TLS_CA"
  | "TLS_CERT"
  | "TLS_KEY";

/**
 * A connection setting from the environment (src/config/schema.ts): `CONCLAVE_NATS_<ROLE>_<NAME>`
 * (e.g. CONCLAVE_NATS_RUNNER_NKEY_SEED_FILE) wins over `CONCLAVE_NATS_<NAME>`,
 * so one environment (that of `conclave up`) can give every role its own. The
 * standard fallback (NATS_CREDS) is read apart: see busOptions.
 */
const setting = (env: Env, role: Role, name: RoleSetting): string | undefined =>
  configSetting(env, `CONCLAVE_NATS_${name}`, { role, fallbacks: false, error: busConfigError });

/** A secret file's text without its trailing newline; BusConfigError if it cannot be read or is empty. */
export function readSecretFile(path: string, what: string): string {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    throw new BusConfigError(`cannot read the ${what} file ${path}: ${singleLine(messageOf(error), 120)}`);
  }
  const secret = text.replace(/\r?\n$/, "");
  if (secret.trim() === "") throw new BusConfigError(`the ${what} file ${path} is empty`);
  return secret;
}

/** The seed in an nkey seed file, checked to be a user seed (`SU…`), as bytes for nkeyAuthenticator. */
function readUserSeed(path: string): Uint8Array {
  const seed = readSecretFile(path, "nkey seed").trim();
  try {
    const pair = nkeys.fromSeed(new TextEncoder().encode(seed));
    if (!pair.getPublicKey().startsWith("U")) throw new Error("not a user key");
  } catch {
    // Never quote the file: it holds a secret.
    throw new BusConfigError(`the nkey seed file ${path} does not hold a user nkey seed (one line starting with SU)`);
  }
  return new TextEncoder().encode(seed);
}

/** A `.creds` file's bytes, checked to hold a user JWT and a user seed (as `nsc` writes them). */
function readCreds(path: string): Uint8Array {
  const text = readSecretFile(path, "creds");
  if (!/-{3,}BEGIN NATS USER JWT-{3,}/.test(text) || !/-{3,}BEGIN USER NKEY SEED-{3,}/.test(text)) {
    throw new BusConfigError(
      `the creds file ${path} does not hold a user JWT and seed (a .creds file as nsc writes it)`,
    );
  }
  // The library's parser wants the newline after the last END line, which readSecretFile took off.
  return new TextEncoder().encode(`${text}\n`);
}

const LOOPBACK = /^(localhost|127(\.\d{1,3}){3}|\[?::1\]?)$/i;

/** The host of one server URL (scheme optional), lower-cased. */
function hostOf(url: string): string {
  const bare = url.trim().replace(/^[a-z][a-z0-9+.-]*:\/\//i, "");
  try {
    return new URL(`http://${bare}`).hostname.toLowerCase();
  } catch {
    throw new BusConfigError(`bad NATS URL ${singleLine(url, 120)}`);
  }
}

/** The server URLs of a list, each entry possibly comma-separated. */
export const serverUrls = (servers: string | readonly string[]): string[] =>
  [servers]
    .flat()
    .flatMap((entry) => entry.split(","))
    .map((part) => part.trim())
    .filter((part) => part !== "");

/** TLS as given (it wins over the environment, as a whole), else from the environment; undefined when not wanted. */
function tlsFrom(env: Env, role: Role, urls: string[], chosen?: TlsFiles): TlsFiles | undefined {
  const caFile = chosen ? given(chosen.caFile) : setting(env, role, "TLS_CA");
  const certFile = chosen ? given(chosen.certFile) : setting(env, role, "TLS_CERT");
  const keyFile = chosen ? given(chosen.keyFile) : setting(env, role, "TLS_KEY");
  if ((certFile === undefined) !== (keyFile === undefined)) {
    const names = chosen ? "tls.certFile and tls.keyFile" : "CONCLAVE_NATS_TLS_CERT and CONCLAVE_NATS_TLS_KEY";
    throw new BusConfigError(
      `a TLS client certificate needs both ${names}; the ${role} role has only ${certFile ? "the certificate" : "the key"}`,
    );
  }
  const wanted = chosen !== undefined || urls.some((url) => /^tls:\/\//i.test(url)) || caFile || certFile;
  if (!wanted) return undefined;
  return { ...(caFile ? { caFile } : {}), ...(certFile ? { certFile } : {}), ...(keyFile ? { keyFile } : {}) };
}

const HOW_TO_AUTHENTICATE =
  "CONCLAVE_NATS_USER with CONCLAVE_NATS_PASSWORD or CONCLAVE_NATS_PASSWORD_FILE, CONCLAVE_NATS_NKEY_SEED_FILE, or CONCLAVE_NATS_CREDS_FILE";

/**
 * Connection options from flags, then the environment, then the role's
 * development defaults. Each CONCLAVE_NATS_* credential or TLS setting may be
 * given for one role as CONCLAVE_NATS_<ROLE>_*, which wins.
 *
 * The standard NATS_URL and NATS_CREDS are read after the CONCLAVE_NATS_* names
 * (NATS_CREDS only when the role is given no other way to log in).
 *
 * A role logs in one way: a creds file, an nkey seed file, or a user and a
 * password (CONCLAVE_NATS_PASSWORD or, better, CONCLAVE_NATS_PASSWORD_FILE);
 * two at once is a BusConfigError. TLS is required by the client when a URL is
 * `tls://` or a CA, certificate or key file is given.
 *
 * CONCLAVE_ENV must be `development` (default) or `production`, else
 * BusConfigError. With production there are no defaults: credentials must be
 * given, a development password is refused, and every server must be reached
 * over TLS or on loopback (InsecureCredentialsError).
 */
export function busOptions(
  role: Role,
  overrides: Partial<BusOptions> = {},
  env = process.env,
): BusOptions & { servers: string[] } {
  // `url` was renamed `servers`: refused, since ignoring it would quietly connect somewhere else.
  if ("url" in overrides)
    throw new BusConfigError("the connection option `url` is now `servers` (a list, or comma-separated)");
  const production = isProduction(env);
  const listed = serverUrls(overrides.servers ?? "");
  const urls =
    listed.length > 0 ? listed : serverUrls(configSetting(env, "CONCLAVE_NATS_URL", { error: busConfigError }));
  const passwordVariable = setting(env, role, "PASSWORD");
  const passwordFile = setting(env, role, "PASSWORD_FILE");
  if (passwordVariable && passwordFile && !overrides.password) {
    throw new BusConfigError(
      `the ${role} role has both CONCLAVE_NATS_PASSWORD and CONCLAVE_NATS_PASSWORD_FILE; give one`,
    );
  }
  let user = given(overrides.user, setting(env, role, "USER"));
  let password = given(
    overrides.password,
    passwordVariable,
    passwordFile === undefined ? undefined : readSecretFile(passwordFile, "password"),
  );
  const nkeySeedFile = given(overrides.nkeySeedFile, setting(env, role, "NKEY_SEED_FILE"));
  let credsFile = given(overrides.credsFile, setting(env, role, "CREDS_FILE"));
  // NATS_CREDS (the nats CLI's) only when nothing of Conclave's own says how to log in.
  if (!(user || password || nkeySeedFile || credsFile))
    credsFile = configSetting(env, "CONCLAVE_NATS_CREDS_FILE", { role, error: busConfigError });
  const chosen = [
    user || password ? "a user and password" : null,
    nkeySeedFile ? "an nkey seed file" : null,
    credsFile ? "a creds file" : null,
  ].filter((way) => way !== null);
  if (chosen.length > 1) {
    throw new BusConfigError(`the ${role} role is given ${chosen.join(" and ")}; give only one way to log in`);
  }
  if (nkeySeedFile) readUserSeed(nkeySeedFile);
  if (credsFile) readCreds(credsFile);
  const tls = tlsFrom(env, role, urls, overrides.tls);
  if (production) {
    if (chosen.length === 0) {
      throw new InsecureCredentialsError(
        `CONCLAVE_ENV=production: no NATS user and password or other credentials for the ${role} role (${HOW_TO_AUTHENTICATE}); production has no development defaults`,
      );
    }
    if (chosen[0] === "a user and password" && !(user && password)) {
      throw new InsecureCredentialsError(
        `CONCLAVE_ENV=production: no NATS ${user ? "password (CONCLAVE_NATS_PASSWORD or CONCLAVE_NATS_PASSWORD_FILE)" : "user (CONCLAVE_NATS_USER)"} for the ${role} role; production has no development defaults`,
      );
    }
    // `conclave-dev-…` covers nats.conf users that are no Conclave role (the operator).
    if (password?.startsWith("conclave-dev-")) {
      throw new InsecureCredentialsError(
        `CONCLAVE_ENV=production: the NATS password given for the ${role} role is a development default from the repo's nats.conf; use your own nats.conf with your own passwords`,
      );
    }
    const exposed = tls ? undefined : urls.find((server) => !LOOPBACK.test(hostOf(server)));
    if (exposed) {
      throw new InsecureCredentialsError(
        `CONCLAVE_ENV=production: ${singleLine(exposed, 120)} is neither TLS nor loopback; use a tls:// URL (with CONCLAVE_NATS_TLS_CA for your own CA) or a server on 127.0.0.1`,
      );
    }
  }
  if (chosen.length === 0 || chosen[0] === "a user and password") {
    user ??= DEV_CREDENTIALS[role].user;
    password ??= DEV_CREDENTIALS[role].password;
  }
  return {
    servers: urls,
    ...(user !== undefined ? { user } : {}),
    ...(password !== undefined ? { password } : {}),
    ...(nkeySeedFile ? { nkeySeedFile } : {}),
    ...(credsFile ? { credsFile } : {}),
    ...(tls ? { tls } : {}),
    name: overrides.name ?? `conclave-${role}:${process.pid}`,
    inboxPrefix: overrides.inboxPrefix ?? INBOX_PREFIXES[role],
    persistent: overrides.persistent ?? false,
    ...(overrides.reconnectAttempts !== undefined ? { reconnectAttempts: overrides.reconnectAttempts } : {}),
  };
}

/**
 * Reads a secret file now (a BusConfigError if it cannot be read) and again at
 * every (re)connection, so a rotated seed or creds file is picked up without a
 * restart; a read that fails later keeps the last good contents.
 */
function rereading(read: () => Uint8Array): () => Uint8Array {
  let last = read();
  return () => {
    try {
      last = read();
    } catch {
      // keep the last good secret: a file being replaced must not break a reconnection
    }
    return last;
  };
}

function authenticatorOf(options: BusOptions): Authenticator | undefined {
  const { credsFile, nkeySeedFile } = options;
  if (credsFile) {
    return credsAuthenticator(rereading(() => readCreds(credsFile)));
  }
  if (nkeySeedFile) return nkeyAuthenticator(rereading(() => readUserSeed(nkeySeedFile)));
  return undefined;
}

export async function connectBus(options: BusOptions): Promise<NatsConnection> {
  const authenticator = authenticatorOf(options);
  const servers = serverUrls(options.servers);
  return connect({
    servers,
    ...(authenticator ? { authenticator } : { user: options.user, pass: options.password }),
    ...(options.tls ? { tls: options.tls } : {}),
    name: options.name,
    inboxPrefix: options.inboxPrefix,
    // The client's default gives up after ~20 s of outage; a runtime must not.
    maxReconnectAttempts: options.reconnectAttempts ?? (options.persistent ? -1 : 10),
    // Capturing a stack for every request cost the runner a third of its CPU (every
    // JetStream publish is a request); our errors carry subject and code instead.
    noAsyncTraces: true,
    waitOnFirstConnect: options.persistent,
    reconnectTimeWait: 250,
    timeout: 5_000,
    // A link that goes silent without closing (a network partition) is noticed after two unanswered
    // pings, ~10 s, and the process moves to another server of the cluster; the client's default
    // (2 min × 2) would leave a runner or worker on a cut-off node for minutes.
    ...(options.persistent ? { pingInterval: PERSISTENT_PING_MS, maxPingOut: 2 } : {}),
  }).catch((error: unknown) => {
    throw error instanceof ConnectionError ? new NatsUnreachableError(servers, error) : error;
  });
}

/** How often a long-lived process pings its server (a partitioned link is given up after two missed). */
export const PERSISTENT_PING_MS = 5_000;
