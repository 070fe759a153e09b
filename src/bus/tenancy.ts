import { z } from "zod";
import { SessionId } from "../contracts/ids.ts";
import { describeIssues } from "../contracts/issues.ts";
import { HandlerError } from "./errors.ts";
import { SUBJECT_ROOT } from "./subjects.ts";

/**
 * A tenant's name, as its account's imports put it in subjects: 1–32
 * characters of A-Z a-z 0-9 and `_`. No `-`: in the runtime, a tenant's
 * session is `<tenant>-<session>`, and the first `-` must say where the name ends.
 */
export const TenantName = z
  .string()
  .regex(/^[A-Za-z0-9_]{1,32}$/, "a tenant name is 1-32 characters of A-Z, a-z, 0-9 or '_'");

/** Who asked, and about which session: the runtime's session id and the one the requester uses. */
export interface Addressed {
  /** The tenant whose account the request came through; null for a client in the runtime's own account. */
  tenant: string | null;
  /** The session id the runtime stores and runs the session under. */
  sessionId: string;
  /** The session id as the requester named it (what its acks and events show). */
  view: string;
}

/** The runtime's id of a tenant's session: its sessions can never be named by another tenant. */
export const tenantSessionId = (tenant: string, session: string): string => `${tenant}-${session}`;

/**
 * Reads who is asking and for which session from a request's subject:
 * `conclave.<verb…>.<session>` from a client of the runtime's own account, or
 * `conclave.tenant.<tenant>.<verb…>.<session>` through a tenant account's
 * import. Throws a HandlerError (`invalid_request`) for a bad name.
 */
export function addressOf(subject: string): Addressed {
  const tokens = subject.split(".");
  const view = tokens.at(-1) ?? "";
  const session = SessionId.safeParse(view);
  if (!session.success) {
    throw new HandlerError(
      "invalid_request",
      `bad session id in subject ${subject}: ${describeIssues(session.error, { root: "", join: "; " })}`,
    );
  }
  if (tokens[0] !== SUBJECT_ROOT || tokens[1] !== "tenant") return { tenant: null, sessionId: view, view };
  const tenant = TenantName.safeParse(tokens[2]);
  if (!tenant.success) {
    throw new HandlerError(
      "invalid_request",
      `bad tenant in subject ${subject}: ${describeIssues(tenant.error, { root: "", join: "; " })}`,
    );
  }
  const sessionId = tenantSessionId(tenant.data, view);
  if (!SessionId.safeParse(sessionId).success) {
    throw new HandlerError(
      "invalid_request",
      `session id ${view} is too long for tenant ${tenant.data}: tenant, '-' and session id together are at most 64 characters`,
    );
  }
  return { tenant: tenant.data, sessionId, view };
}
