/**
 * Which remote A2A agents the runner may reach, and who may name them: the
 * operator's allowlist (CONCLAVE_A2A_ALLOW) and whether tenants' recipes may
 * name remote agents at all (CONCLAVE_A2A_TENANTS); and the one error a
 * refused or failed remote agent gives, which never says what answered.
 */

import { type AllowEntry, allows, parseAllowlist } from "../config/allowlist.ts";
import type { Env } from "../config/load.ts";
import { setting } from "../config/load.ts";
import { ConclaveError, singleLine } from "../errors.ts";

/** What the operator allows. */
export interface RemoteAgentPolicy {
  /** The allowlist: empty, every remote agent is refused. */
  allow: readonly AllowEntry[];
  /** Whether a tenant's recipe may name remote agents (those the allowlist admits). */
  tenants: boolean;
}

/** Why a remote agent could not be asked, as its error says it. */
export type RemoteAgentFailure = "not_allowed" | "unreachable" | "failed";

const SAYS: Record<RemoteAgentFailure, string> = {
  not_allowed: "remote agent not allowed",
  unreachable: "remote agent unreachable",
  failed: "remote agent call failed",
};

/**
 * A remote agent refused by the policy (code `forbidden`), or one that could
 * not be reached or whose call failed (`agent_failed`). The message names the
 * card's url (as the recipe gave it) and the failure, nothing of what
 * answered (no address, status or body): `detail` has that, for the runner's log only.
 */
export class RemoteAgentError extends ConclaveError<"forbidden" | "agent_failed"> {
  /** The card's url, as the recipe named it. */
  readonly cardUrl: string;
  readonly failure: RemoteAgentFailure;
  /** What happened, for the runner's own log: never sent to whoever named the agent. */
  readonly detail: string;
  constructor(cardUrl: string, failure: RemoteAgentFailure, detail: string) {
    super(
      failure === "not_allowed" ? "forbidden" : "agent_failed",
      singleLine(`A2A agent ${cardUrl}: ${SAYS[failure]}`, 1_000),
    );
    this.cardUrl = cardUrl;
    this.failure = failure;
    this.detail = singleLine(detail, 1_000);
  }
}

/** The policy as `entries` and `tenants` say, a bad entry a problem each. */
export function remoteAgentPolicyOf(entries: readonly string[], tenants = false): RemoteAgentPolicy {
  const parsed = parseAllowlist(entries);
  if (parsed.problems.length > 0) throw new ConclaveError("config", `A2A allowlist: ${parsed.problems.join("; ")}`);
  return { allow: parsed.entries, tenants };
}

let cached: { key: string; policy: RemoteAgentPolicy } | undefined;

/** The policy the environment sets (CONCLAVE_A2A_ALLOW, CONCLAVE_A2A_TENANTS); a bad value is a `config` error. */
export function remoteAgentPolicy(env: Env = process.env): RemoteAgentPolicy {
  const key = `${env.CONCLAVE_A2A_ALLOW ?? ""}\n${env.CONCLAVE_A2A_TENANTS ?? ""}`;
  if (cached?.key === key) return cached.policy;
  const policy: RemoteAgentPolicy = {
    allow: setting(env, "CONCLAVE_A2A_ALLOW") ?? [],
    tenants: setting(env, "CONCLAVE_A2A_TENANTS"),
  };
  cached = { key, policy };
  return policy;
}

/** The environment's policy, or none allowed when a setting is bad (`conclave config` shows which): for checks that must not throw. */
export function remoteAgentPolicyOrNone(env: Env = process.env): RemoteAgentPolicy {
  try {
    return remoteAgentPolicy(env);
  } catch {
    return { allow: [], tenants: false };
  }
}

/**
 * What is wrong with a submitted recipe's remote agents (by agent id), for
 * whoever submitted it (`tenant`, or null for a client of the runtime's own
 * account): a tenant may name none unless the policy lets tenants, and every
 * card must be one the allowlist admits. Empty when all may be asked.
 */
export function refusedRemoteAgents(
  refs: Readonly<Record<string, { card_url: string }>>,
  tenant: string | null,
  policy: RemoteAgentPolicy,
): string[] {
  const ids = Object.keys(refs);
  if (ids.length === 0) return [];
  if (tenant !== null && !policy.tenants)
    return ids.map((id) => `${id}: remote agent not allowed (a tenant's recipe may not name remote A2A agents)`);
  return ids.flatMap((id) => {
    return allows(policy.allow, refs[id]!.card_url, "card") ? [] : [`${id}: remote agent not allowed`];
  });
}
