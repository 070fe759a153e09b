/**
 * Follow-watches a runner serves (`conclave.turn.watch.<session>`), each
 * holding a JetStream consumer while it lasts: capped per tenant and per
 * session, and ended once their requester stops renewing them. Core NATS
 * never tells a server that a requester's inbox is gone (and a tenant's
 * replies cross an account import), so a watch lives on renewals: the
 * requester publishes `{ "renew": "<watch_id>" }` on the watch's subject,
 * every 5 s (WATCH_RENEW_MS), and the runner serving it ends it when none
 * came for the keepalive window.
 */
import { HandlerError } from "../../bus/errors.ts";
import { lenientSetting } from "../../config/load.ts";
import { WatchRenewal } from "../../contracts/watch.ts";

/** Whether a message on a watch subject is a renewal (not a watch request). */
export function isRenewal(data: Uint8Array): boolean {
  try {
    return WatchRenewal.safeParse(JSON.parse(new TextDecoder().decode(data))).success;
  } catch {
    return false;
  }
}

/** The caps and keepalive window of one runner's follow-watches. */
export interface WatchLimits {
  /** Most follow-watches one tenant may hold on this runner (`CONCLAVE_WATCH_MAX_PER_TENANT`). */
  perTenant: number;
  /** Most follow-watches one session may have on this runner (`CONCLAVE_WATCH_MAX_PER_SESSION`). */
  perSession: number;
  /** How long a watch lasts without a renewal, in ms (`CONCLAVE_WATCH_KEEPALIVE_MS`). */
  keepaliveMs: number;
}

/** The limits set in the environment, or their defaults (for a bad value too: `conclave config` shows it). */
export function watchLimitsFrom(env: NodeJS.ProcessEnv = process.env): WatchLimits {
  return {
    perTenant: lenientSetting(env, "CONCLAVE_WATCH_MAX_PER_TENANT"),
    perSession: lenientSetting(env, "CONCLAVE_WATCH_MAX_PER_SESSION"),
    keepaliveMs: lenientSetting(env, "CONCLAVE_WATCH_KEEPALIVE_MS"),
  };
}

/** One open follow-watch: aborted when its renewals stop; `close` gives its place back. */
export interface WatchLease {
  /** Aborts when the requester has not renewed the watch within the keepalive window. */
  readonly signal: AbortSignal;
  /** Counts a renewal: the watch lives another keepalive window. */
  renew(): void;
  /** Ends the lease (idempotent): its timer stops and its place under the caps is free again. */
  close(): void;
}

/** The follow-watches a runner holds, by tenant and by session. */
export class WatchLeases {
  readonly limits: WatchLimits;
  private readonly byTenant = new Map<string, number>();
  private readonly bySession = new Map<string, number>();

  constructor(limits: WatchLimits) {
    this.limits = limits;
  }

  /** Watches open now: for a tenant's, or a session's (the runtime's id). */
  count(of: { tenant: string } | { sessionId: string }): number {
    return "tenant" in of ? (this.byTenant.get(of.tenant) ?? 0) : (this.bySession.get(of.sessionId) ?? 0);
  }

  /**
   * Opens a follow-watch for `tenant` (null: a client of the runtime's own
   * account, under the session cap only) on `sessionId`. Throws a
   * HandlerError `busy` when the tenant or the session is at its cap.
   */
  open(tenant: string | null, sessionId: string): WatchLease {
    if (tenant !== null && this.count({ tenant }) >= this.limits.perTenant)
      throw new HandlerError(
        "busy",
        `tenant ${tenant} has ${this.limits.perTenant} follow-watches open on this runner, its most (CONCLAVE_WATCH_MAX_PER_TENANT): end one first`,
      );
    if (this.count({ sessionId }) >= this.limits.perSession)
      throw new HandlerError(
        "busy",
        `session has ${this.limits.perSession} follow-watches open on this runner, its most (CONCLAVE_WATCH_MAX_PER_SESSION): end one first`,
      );
    if (tenant !== null) bump(this.byTenant, tenant, 1);
    bump(this.bySession, sessionId, 1);
    const expired = new AbortController();
    const timer = setTimeout(() => expired.abort(), this.limits.keepaliveMs);
    timer.unref?.();
    let closed = false;
    return {
      signal: expired.signal,
      renew: () => {
        if (!closed && !expired.signal.aborted) timer.refresh();
      },
      close: () => {
        if (closed) return;
        closed = true;
        clearTimeout(timer);
        if (tenant !== null) bump(this.byTenant, tenant, -1);
        bump(this.bySession, sessionId, -1);
      },
    };
  }
}

function bump(counts: Map<string, number>, key: string, by: number): void {
  const next = (counts.get(key) ?? 0) + by;
  if (next > 0) counts.set(key, next);
  else counts.delete(key);
}
