/**
 * Who calls `conclave serve`: every token maps to a **principal**, and each principal's work is its own.
 * A hostile run found every gateway caller was the same caller (issue 34): any token listed everyone's
 * A2A tasks, wrote into any session (tenants' included), cancelled others' tasks and answered their
 * approvals as a role it named itself. A principal is either
 * - a **tenant**: the gateway reaches NATS with the tenant's own login, so NATS itself keeps the tenant
 *   to its own sessions (docs/production.md, "Tenants"); or
 * - a **named client**: the gateway's own `client` login, with the principal's sessions under its
 *   namespace (`<namespace>-<session>`), so no two principals share a session.
 * Approver roles come from this configuration, never from a request.
 *
 * The file (`conclave serve --principals FILE`, or CONCLAVE_GATEWAY_PRINCIPALS) is JSON or YAML:
 *
 * ```yaml
 * principals:
 *   - name: alice
 *     token_file: /etc/conclave/alice.token
 *     tenant: alice
 *     nats: { user: alice, password_file: /etc/conclave/alice.nats }
 *     approver_roles: [editor]
 *   - name: crm
 *     token_file: /etc/conclave/crm.token
 *     namespace: crm
 * ```
 */
import { createHash, timingSafeEqual } from "node:crypto";
import { readFileSync } from "node:fs";
import type { IncomingMessage } from "node:http";
import { z } from "zod";
import { readSecretFile } from "../bus/connection.ts";
import { tenantSessionId } from "../bus/tenancy.ts";
import type { ConclaveClient } from "../client/client.ts";
import { readDataFile } from "../config/dataFile.ts";
import { ConfigError } from "../config/variable.ts";
import { describeIssues } from "../contracts/issues.ts";
import { ConclaveError, messageOf } from "../errors.ts";
import { MIN_TOKEN_LENGTH } from "./access.ts";

/** The longest session id (src/contracts/ids.ts). */
const MAX_SESSION_ID = 64;

/** A principal's name: it owns A2A tasks and appears in logs. */
const PrincipalName = z.string().regex(/^[A-Za-z0-9_]{1,32}$/, "1-32 characters of A-Z, a-z, 0-9 or '_'");

const PrincipalEntry = z
  .object({
    name: PrincipalName,
    /** A file holding the principal's bearer token (first line). */
    token_file: z.string().min(1),
    /** A tenant of the NATS configuration: the gateway talks to NATS as it. */
    tenant: PrincipalName.optional(),
    /** The tenant's NATS login (a tenant principal only). */
    nats: z
      .object({
        user: z.string().min(1),
        password_file: z.string().min(1).optional(),
        creds_file: z.string().min(1).optional(),
      })
      .strict()
      .optional(),
    /** A named client: its sessions are `<namespace>-<session>`. Default: the principal's name. */
    namespace: PrincipalName.optional(),
    /** The roles this principal may answer approvals and human nodes as. Default: none. */
    approver_roles: z.array(z.string().min(1).max(64)).max(32).default([]),
  })
  .strict()
  .refine((entry) => entry.tenant === undefined || entry.namespace === undefined, {
    message: "a principal is a tenant or a named client with a namespace, not both",
  })
  .refine((entry) => entry.tenant === undefined || entry.nats !== undefined, {
    message: "a tenant principal needs its tenant's NATS login (nats: {user, password_file})",
  });

const PrincipalsFile = z.object({ principals: z.array(PrincipalEntry).min(1).max(1_000) }).strict();

/** One caller of the gateway, resolved from its token. */
export interface Principal {
  readonly name: string;
  /** Set for a tenant: its NATS login, and its sessions are the tenant's. */
  readonly tenant?: { name: string; nats: { user: string; password?: string; credsFile?: string } };
  /** For a named client: the prefix of its sessions' ids (`<namespace>-`); empty for a tenant and for `local`. */
  readonly sessionPrefix: string;
  /** The roles it may answer approvals and human nodes as. */
  readonly approverRoles: readonly string[];
  /**
   * Only the sole principal of a gateway without a principals file: the one operator holding its token
   * (or this machine), trusted to name its role in a request, as before principals existed.
   */
  readonly trustsRequestRoles?: boolean;
}

/**
 * The principal of a gateway with no principals file: the one token's holder, or anyone on this machine
 * without a token. Its sessions carry no prefix, as before principals existed.
 */
export const SOLE_PRINCIPAL: Principal = {
  name: "gateway",
  sessionPrefix: "",
  approverRoles: [],
  trustsRequestRoles: true,
};

/** The principals of a gateway, by token. */
export class Principals {
  readonly #byDigest: { digest: Buffer; principal: Principal }[];

  private constructor(entries: { token: string; principal: Principal }[]) {
    this.#byDigest = entries.map(({ token, principal }) => ({ digest: digest(token), principal }));
  }

  /** A gateway with one token (or none): every caller is {@link SOLE_PRINCIPAL}. */
  static sole(token: string | null): Principals {
    return new Principals(token === null ? [] : [{ token, principal: SOLE_PRINCIPAL }]);
  }

  /** Reads a principals file; a ConfigError (one line, exit 2) names what is wrong. */
  static fromFile(file: string): Principals {
    const raw = readDataFile(file, (reason) => new ConfigError(`principals file ${file}: cannot read it: ${reason}`));
    const checked = PrincipalsFile.safeParse(raw ?? {});
    if (!checked.success)
      throw new ConfigError(`principals file ${file}: ${describeIssues(checked.error, { join: "; " })}`);
    const entries = checked.data.principals.map((entry) => ({
      token: readToken(entry.token_file, entry.name),
      principal: principalOf(entry),
    }));
    refuseClashes(entries, file);
    return new Principals(entries);
  }

  /** How many tokens it knows (0: a loopback gateway without a token). */
  get size(): number {
    return this.#byDigest.length;
  }

  /** The principal whose token an Authorization header carries (compared in constant time), or null. */
  resolve(authorization: string | undefined): Principal | null {
    const match = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(authorization ?? "");
    if (!match) return null;
    const given = digest(match[1]!);
    let found: Principal | null = null;
    // Every entry is compared, found or not: the time taken says nothing of which token matched.
    for (const entry of this.#byDigest) if (timingSafeEqual(given, entry.digest)) found = entry.principal;
    return found;
  }
}

const digest = (text: string) => createHash("sha256").update(text).digest();

function readToken(file: string, name: string): string {
  let token: string;
  try {
    token = readFileSync(file, "utf8").replace(/\r?\n[\s\S]*$/, "");
  } catch (error) {
    throw new ConfigError(`principal ${name}: cannot read its token_file ${file}: ${messageOf(error)}`);
  }
  if (!/^[\x21-\x7e]+$/.test(token) || token.length < MIN_TOKEN_LENGTH)
    throw new ConfigError(
      `principal ${name}: its token must be at least ${MIN_TOKEN_LENGTH} printable characters without spaces (e.g. openssl rand -hex 32)`,
    );
  return token;
}

function principalOf(entry: z.infer<typeof PrincipalEntry>): Principal {
  const base = { name: entry.name, approverRoles: entry.approver_roles };
  if (entry.tenant === undefined) return { ...base, sessionPrefix: `${entry.namespace ?? entry.name}-` };
  const nats = entry.nats!;
  return {
    ...base,
    sessionPrefix: "",
    tenant: {
      name: entry.tenant,
      nats: {
        user: nats.user,
        ...(nats.password_file ? { password: readSecretFile(nats.password_file, "password") } : {}),
        ...(nats.creds_file ? { credsFile: nats.creds_file } : {}),
      },
    },
  };
}

/**
 * Two principals may not share a name or a token, and a named client's namespace may not be a tenant's
 * name: its sessions `<namespace>-<session>` would be that tenant's.
 */
function refuseClashes(entries: { token: string; principal: Principal }[], file: string): void {
  const seen = new Set<string>();
  const tokens = new Set<string>();
  const tenants = new Set(entries.flatMap(({ principal }) => (principal.tenant ? [principal.tenant.name] : [])));
  for (const { token, principal } of entries) {
    if (seen.has(principal.name))
      throw new ConfigError(`principals file ${file}: two principals named ${principal.name}`);
    if (tokens.has(token)) throw new ConfigError(`principals file ${file}: principal ${principal.name} reuses a token`);
    const namespace = principal.sessionPrefix.slice(0, -1);
    if (namespace && tenants.has(namespace))
      throw new ConfigError(
        `principals file ${file}: principal ${principal.name}'s namespace ${namespace} is a tenant's name: its sessions would be the tenant's`,
      );
    seen.add(principal.name);
    tokens.add(token);
  }
}

/** Who made each request the gateway let in (set by its access check, read by the routes). */
const callers = new WeakMap<IncomingMessage, Principal>();

/** Records the request's principal (the access check, once it let the request in). */
export function admitCaller(request: IncomingMessage, principal: Principal): void {
  callers.set(request, principal);
}

/** The principal of a request the gateway let in. */
export function callerOf(request: IncomingMessage): Principal {
  const principal = callers.get(request);
  if (!principal) throw new Error("a gateway route ran for a request no access check let in");
  return principal;
}

/** A session id too long once the principal's namespace is put before it. */
export class SessionIdTooLongError extends ConclaveError<"invalid_request"> {
  constructor(sessionId: string, room: number) {
    super("invalid_request", `session id ${sessionId} is too long: at most ${room} characters here`);
  }
}

/** The session a principal's own session id names (`<namespace>-<id>` for a named client). */
export function sessionOf(principal: Principal, sessionId: string): string {
  const room = MAX_SESSION_ID - principal.sessionPrefix.length;
  if (sessionId.length > room) throw new SessionIdTooLongError(sessionId, room);
  return `${principal.sessionPrefix}${sessionId}`;
}

/**
 * The role a principal answers an approval or a human node as: the one the request names when the
 * principal may name it (its configured roles, or any for the sole principal), else its first role.
 */
export function answeringRole(principal: Principal, named: string | undefined): string | undefined {
  if (principal.trustsRequestRoles) return named;
  if (named === undefined) return principal.approverRoles[0];
  if (principal.approverRoles.includes(named)) return named;
  throw new ConclaveError(
    "forbidden",
    principal.approverRoles.length === 0
      ? `${principal.name} may not answer as a role: the gateway's principals file gives it none`
      : `${principal.name} may answer only as ${principal.approverRoles.join(", ")}, not ${named}`,
  );
}

/**
 * The Conclave client each principal talks through: the gateway's own for named clients, and for a
 * tenant one of its own, logged in as the tenant (made at its first call, then kept).
 */
export class GatewayClients {
  readonly #tenants = new Map<string, Promise<ConclaveClient>>();

  constructor(
    private readonly own: ConclaveClient,
    private readonly connectTenant: (principal: Principal) => Promise<ConclaveClient>,
  ) {}

  /** A gateway whose callers all talk through one client (stdio, or no tenant principals). */
  static single(client: ConclaveClient): GatewayClients {
    return new GatewayClients(client, (principal) =>
      Promise.reject(new Error(`principal ${principal.name} is a tenant, and this gateway connects none`)),
    );
  }

  for(principal: Principal): Promise<ConclaveClient> {
    if (!principal.tenant) return Promise.resolve(this.own);
    let client = this.#tenants.get(principal.name);
    if (!client) {
      client = this.connectTenant(principal);
      this.#tenants.set(principal.name, client);
      // A login that failed is tried again at the next call.
      client.catch(() => this.#tenants.delete(principal.name));
    }
    return client;
  }

  /** Closes the tenants' clients (the gateway's own is its owner's to close). */
  async close(): Promise<void> {
    const clients = await Promise.allSettled(this.#tenants.values());
    await Promise.allSettled(clients.map((each) => (each.status === "fulfilled" ? each.value.close() : undefined)));
  }
}

/**
 * The runtime's id of a session the principal's client names `session` (what
 * {@link sessionOf} gives, or a run's ack shows): a tenant's client names its
 * sessions in its own account, which the runtime keeps as `<tenant>-<session>`;
 * the gateway's own client names them as the runtime does.
 */
export function runtimeSessionOf(principal: Principal, session: string): string {
  return principal.tenant ? tenantSessionId(principal.tenant.name, session) : session;
}
