/**
 * Budgets (docs/cost.md): once a session has spent its budget, the runner's
 * intake refuses its next turn (`forbidden`, one line saying so). The budget
 * is CONCLAVE_SESSION_BUDGET_USD, or the session's tenant's `budget_usd` in
 * the price table (a tenant's budget caps each of its sessions).
 *
 * The check stays cheap: without a budget it does nothing at all; with one,
 * each runner keeps a running total per session in memory and reads only
 * the turns finished since it last looked (each finished turn read once per
 * runner process; a turn still running is read again at the next check), never the whole log again.
 */
import { type JetStreamClient, type JetStreamManager, jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import { HandlerError } from "../bus/errors.ts";
import { setting } from "../config/load.ts";
import { readEvents } from "../eventlog/reader.ts";
import { type PriceTable, priceTableFromEnv } from "./prices.ts";
import { summarizeCost } from "./summary.ts";

/** A turn refused because its session's budget is spent; code `forbidden` on the wire. */
export class BudgetExceededError extends HandlerError {
  constructor(
    readonly sessionId: string,
    readonly spentUsd: number,
    readonly budgetUsd: number,
    readonly source: string,
  ) {
    super(
      "forbidden",
      `budget exceeded: session ${sessionId} has spent $${spentUsd.toFixed(4)} of its $${budgetUsd.toFixed(2)} budget (${source}); no further turn is accepted`,
    );
  }
}

/** What the guard needs to read a session's finished turns. */
export interface SpendSources {
  nc: NatsConnection;
  js: JetStreamClient;
  /** The session's last turn id (SessionStore.lastTurnId). */
  lastTurnId(sessionId: string): Promise<number>;
  /**
   * Where a turn stands: `over` (done, failed, expired, or unknown: its usage is final),
   * `running` (inflight: over once its TURN_COMPLETED is stored) or `waiting` (pending or suspended).
   */
  stage(sessionId: string, turnId: number): Promise<"over" | "running" | "waiting">;
}

interface Spend {
  usd: number;
  /** Every turn up to this one is finished and counted. */
  throughTurn: number;
}

/**
 * Refuses a turn of a session that has spent its budget. Made from the
 * environment by {@link budgetGuardFromEnv}, which gives null when no budget is set.
 */
export class BudgetGuard {
  readonly #spend = new Map<string, Spend>();
  #jsm: Promise<JetStreamManager> | null = null;

  constructor(
    readonly prices: PriceTable,
    /** CONCLAVE_SESSION_BUDGET_USD, when set. */
    readonly sessionBudgetUsd: number | undefined,
  ) {}

  /** The budget of a session (of `tenant`, if any): the tenant's when the price table has one, else the session budget. */
  budgetOf(tenant?: string): { usd: number; source: string } | null {
    const own = tenant ? this.prices.tenants[tenant]?.budget_usd : undefined;
    if (own !== undefined) return { usd: own, source: `tenant ${tenant}'s budget in CONCLAVE_PRICES` };
    if (this.sessionBudgetUsd !== undefined)
      return { usd: this.sessionBudgetUsd, source: "CONCLAVE_SESSION_BUDGET_USD" };
    return null;
  }

  /** Throws BudgetExceededError when the session has spent at least its budget. */
  async check(sources: SpendSources, sessionId: string, tenant?: string): Promise<void> {
    const budget = this.budgetOf(tenant);
    if (!budget) return;
    const spent = await this.spent(sources, sessionId);
    if (spent >= budget.usd) throw new BudgetExceededError(sessionId, spent, budget.usd, budget.source);
  }

  /** What the session has spent in its finished turns, reading only those not counted yet. */
  async spent(sources: SpendSources, sessionId: string): Promise<number> {
    const last = await sources.lastTurnId(sessionId);
    let spend = this.#spend.get(sessionId) ?? { usd: 0, throughTurn: 0 };
    if (last < spend.throughTurn) spend = { usd: 0, throughTurn: 0 }; // erased, and started again
    this.#jsm ??= jetstreamManager(sources.nc);
    const jsm = await this.#jsm;
    for (let turnId = spend.throughTurn + 1; turnId <= last; turnId++) {
      const stage = await sources.stage(sessionId, turnId);
      if (stage === "waiting") break; // nothing spent yet, and the turns after it wait behind it
      const events = await readEvents(sources.js, jsm, sessionId, turnId);
      // Its status is written just after its TURN_COMPLETED: a completed turn counts at once.
      const completed = events.some((event) => event.kind === "TURN_COMPLETED");
      if (stage === "running" && !completed) break;
      spend.usd += summarizeCost(sessionId, events, this.prices).total.usd;
      spend.throughTurn = turnId;
    }
    this.#spend.set(sessionId, spend);
    return spend.usd;
  }

  /** Forgets a session's running total (an erased session starts again from nothing). */
  forget(sessionId: string): void {
    this.#spend.delete(sessionId);
  }
}

/** The guard the environment asks for, or null when neither a session nor a tenant budget is set. */
export function budgetGuardFromEnv(env: NodeJS.ProcessEnv = process.env): BudgetGuard | null {
  const sessionBudget = setting(env, "CONCLAVE_SESSION_BUDGET_USD");
  const prices = priceTableFromEnv(env);
  if (sessionBudget === undefined && Object.keys(prices.tenants).length === 0) return null;
  return new BudgetGuard(prices, sessionBudget);
}
