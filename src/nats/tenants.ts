import { TenantName } from "../bus/tenancy.ts";

/** One tenant: a user with an account of its own. Give a password or an nkey (its public key, `U…`). */
export interface TenantAccount {
  name: string;
  password?: string;
  nkey?: string;
}

/** The account that hosts the runtime (runner, workers, observer) in nats.conf. */
export const RUNTIME_ACCOUNT = "CONCLAVE";

const quoted = (value: string) => JSON.stringify(value);

/**
 * The nats.conf accounts of tenants: one account per tenant, whose only
 * links to the runtime are imports carrying the tenant's own name — its
 * submissions arrive as `conclave.tenant.<name>.turn.submit.<session>`, its
 * reads as `conclave.tenant.<name>.turn.watch.<session>`, its memory searches
 * and ledger requests as `conclave.tenant.<name>.memory.search.<session>` and
 * `conclave.tenant.<name>.ledger.<session>`, its knowledge requests as
 * `conclave.tenant.<name>.knowledge.<verb>` — so a tenant can
 * reach its own sessions and nothing else: no JetStream, no other tenant's
 * subjects, and inboxes no other account can subscribe to.
 */
export function tenantAccountsConf(tenants: readonly TenantAccount[]): string {
  return tenants
    .map((tenant) => {
      const name = TenantName.parse(tenant.name);
      if (!tenant.password === !tenant.nkey) {
        throw new Error(`tenant ${name}: give exactly one of password and nkey`);
      }
      const user = tenant.nkey
        ? `{ nkey: ${quoted(tenant.nkey)} }`
        : `{ user: ${quoted(name)}, password: ${quoted(tenant.password!)} }`;
      const imported = (kind: "service" | "stream", from: string, to: string) =>
        `      { ${kind}: { account: ${RUNTIME_ACCOUNT}, subject: ${quoted(from)} }, to: ${quoted(to)} }`;
      return [
        `  TENANT_${name} {`,
        `    users: [ ${user} ]`,
        "    imports: [",
        imported("service", `conclave.tenant.${name}.turn.submit.*`, "conclave.turn.submit.*"),
        imported("service", `conclave.tenant.${name}.turn.watch.*`, "conclave.turn.watch.*"),
        imported("service", `conclave.tenant.${name}.memory.search.*`, "conclave.memory.search.*"),
        imported("service", `conclave.tenant.${name}.ledger.*`, "conclave.ledger.*"),
        imported("service", `conclave.tenant.${name}.session.erase.*`, "conclave.session.erase.*"),
        imported("service", `conclave.tenant.${name}.knowledge.*`, "conclave.knowledge.*"),
        imported("stream", `conclave.tenant.${name}.errors.*`, "conclave.errors.*"),
        "    ]",
        "  }",
      ].join("\n");
    })
    .join("\n");
}

/** A nats.conf (the repo's, or one like it) with tenant accounts added to its `accounts` block. */
export function withTenants(conf: string, tenants: readonly TenantAccount[]): string {
  const at = conf.search(/^accounts\s*\{\s*$/m);
  if (at < 0) throw new Error("the config has no top-level `accounts {` block to add tenants to");
  const lineEnd = conf.indexOf("\n", at) + 1;
  return `${conf.slice(0, lineEnd)}${tenantAccountsConf(tenants)}\n${conf.slice(lineEnd)}`;
}
