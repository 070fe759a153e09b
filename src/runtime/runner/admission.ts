import { availableParallelism } from "node:os";
import { setting } from "../../config/load.ts";
import { turnKey } from "../../contracts/turnKey.ts";
import { AdaptiveLimit, FixedLimit } from "./runningLimit.ts";

/** How a runner bounds the turns it runs at once, and the turns it keeps waiting. */
export interface AdmissionLimits {
  /**
   * Turns running at once (each session runs one turn at a time, so this is
   * also the number of sessions with a turn running). Default: 32 per core
   * (`os.availableParallelism()`): a turn spends most of its time waiting on
   * workers and models, not on the runner's CPU.
   */
  maxRunning: number;
  /**
   * Opt-in: the limit learns from the turns' run times (`runningLimit.ts`), from 8 per core up to
   * `maxRunning`: it grows while running more does not slow turns down and shrinks once it makes
   * them twice as slow as on an idle runner. It keeps admitted turns near their unloaded speed at
   * the cost of throughput (measured in docs/BENCHMARKS.md's history: a quarter less at 100
   * sessions with a 50 ms model). Default false.
   */
  adaptive: boolean;
  /**
   * Turns waiting for a place, across sessions. A submission beyond it is
   * answered `busy` with a retry-after hint, before it is stored. Default: 64
   * per running place.
   */
  maxQueued: number;
  /**
   * The longest a turn should wait for a place, in ms: no more turns wait than this runner, at the
   * rate it is measured to finish them, starts within it; past that a submission is answered `busy`.
   * The rate is the turns it was seen running at once over their mean run time (Little's law), both
   * measured as turns end: never extrapolated past the concurrency it has seen, so a fresh runner
   * facing a burst queues little until its first turns under that load have ended. The queue so
   * adapts to the service rate, and an admitted turn keeps its latency. Default 30 000.
   */
  maxQueueWaitMs: number;
  /**
   * Where tenants are configured: the most turns of one tenant running at
   * once. Default: no quota (every tenant may use every place).
   */
  tenantQuota?: number;
}

/** How long a turn should wait for a place at most, by default: a submitter's patience, not a runner's. */
const DEFAULT_MAX_QUEUE_WAIT_MS = 30_000;

/** The defaults of {@link AdmissionLimits}, from the number of cores. */
export function defaultAdmissionLimits(cores = availableParallelism()): AdmissionLimits {
  const maxRunning = 32 * Math.max(1, cores);
  return { maxRunning, adaptive: false, maxQueued: 64 * maxRunning, maxQueueWaitMs: DEFAULT_MAX_QUEUE_WAIT_MS };
}

/** The environment variables of {@link AdmissionLimits}, each a positive integer. */
const LIMIT_VARIABLES = {
  maxRunning: "CONCLAVE_MAX_RUNNING_TURNS",
  maxQueued: "CONCLAVE_MAX_QUEUED_TURNS",
  maxQueueWaitMs: "CONCLAVE_MAX_QUEUE_WAIT_MS",
  tenantQuota: "CONCLAVE_TENANT_QUOTA",
} as const;

/**
 * A runner's limits: those given, else the environment's
 * (`CONCLAVE_MAX_RUNNING_TURNS`, `CONCLAVE_MAX_QUEUED_TURNS`, `CONCLAVE_MAX_QUEUE_WAIT_MS`,
 * `CONCLAVE_TENANT_QUOTA`), else the defaults. A given value that is not a positive integer throws a RangeError naming it; a bad
 * variable, a "config" ConclaveError naming it (src/config/schema.ts).
 */
export function admissionLimits(given: Partial<AdmissionLimits> = {}, env = process.env): AdmissionLimits {
  const limits: Partial<Omit<AdmissionLimits, "adaptive">> = {};
  for (const [field, variable] of Object.entries(LIMIT_VARIABLES) as [
    keyof typeof LIMIT_VARIABLES,
    (typeof LIMIT_VARIABLES)[keyof typeof LIMIT_VARIABLES],
  ][]) {
    const raw = given[field] ?? setting(env, variable);
    if (raw === undefined) continue;
    if (!Number.isInteger(raw) || raw < 1) throw new RangeError(`admission.${field} must be a positive integer`);
    limits[field] = raw;
  }
  const defaults = defaultAdmissionLimits();
  const maxRunning = limits.maxRunning ?? defaults.maxRunning;
  return {
    maxRunning,
    adaptive: given.adaptive ?? false,
    maxQueued: limits.maxQueued ?? 64 * maxRunning,
    maxQueueWaitMs: limits.maxQueueWaitMs ?? defaults.maxQueueWaitMs,
    ...(limits.tenantQuota !== undefined ? { tenantQuota: limits.tenantQuota } : {}),
  };
}

/** What a turn got when it asked for a place: to run now, or to wait at a position (1: next). */
export type Admitted = { state: "running" } | { state: "queued"; position: number };

/** What a submission would get now, as the intake tells its submitter. */
export type AdmissionPreview = Admitted | { state: "busy"; retryAfterMs: number };

interface Waiting {
  turnId: number;
  /** true: it may start; false: it will not (ended or handed back while it waited). */
  admit: (admitted: boolean) => void;
}

/**
 * Admission control: a runner runs at most `maxRunning` turns at once, one per
 * session; the others wait, in memory, while their WAL entries stay held (so
 * a runner that dies leaves them to be delivered again, in order). Places go
 * round-robin across the sessions that wait — a session with many turns
 * waiting gets one place per round, never all of them — and, with a
 * tenant quota, to sessions whose tenant is under it. Pure bookkeeping: the
 * runner decides when a turn asks, ends or is cancelled.
 */
export class Admission {
  readonly limits: AdmissionLimits;
  /** Sessions with a turn running (or admitted to run), and which turns. */
  readonly #running = new Map<string, Set<number>>();
  /** The tenant of each session with a turn running or waiting (absent: no tenant). */
  readonly #tenants = new Map<string, string>();
  readonly #runningByTenant = new Map<string, number>();
  /** Each session's waiting turns, in arrival order. */
  readonly #waiting = new Map<string, Waiting[]>();
  /** Sessions with turns waiting, in the order they get their next place. */
  #ring: string[] = [];
  #queued = 0;
  /** Mean time a place is held (exponential average, ms), taken as 1 s before any turn ended. */
  #meanRunMs = 1_000;
  /** Mean number of turns running here when one ends (exponential average), taken as 1 before any ended. */
  #meanRunning = 1;
  /** How many turns may run at once now: fixed, or learnt from their run times. */
  readonly #limit: AdaptiveLimit | FixedLimit;
  readonly #startedAt = new Map<string, number>();

  constructor(limits: AdmissionLimits, cores = availableParallelism()) {
    this.limits = limits;
    this.#limit = limits.adaptive
      ? new AdaptiveLimit({ initial: 8 * cores, min: Math.max(2, cores), max: limits.maxRunning })
      : new FixedLimit(limits.maxRunning);
  }

  /** How many turns may run at once now (the adaptive limit's current value, or `maxRunning`). */
  get limit(): number {
    return this.#limit.value;
  }

  /** Sessions with a turn running here. */
  get running(): number {
    return this.#running.size;
  }

  /** Turns waiting for a place here. */
  get queued(): number {
    return this.#queued;
  }

  /**
   * Most turns that may wait here now: `maxQueued`, and no more than the runner, at its measured rate,
   * starts within `maxQueueWaitMs` (never fewer than its running places).
   */
  get queueLimit(): number {
    const startsWithin = Math.floor(this.#startsPerMs * this.limits.maxQueueWaitMs);
    return Math.min(this.limits.maxQueued, Math.max(this.limit, startsWithin));
  }

  /** The turns this runner is measured to start (and finish) per second: {@link AdmissionLimits.maxQueueWaitMs}. */
  get startsPerSecond(): number {
    return this.#startsPerMs * 1_000;
  }

  get #startsPerMs(): number {
    return this.#meanRunning / Math.max(this.#meanRunMs, 1);
  }

  /**
   * What a new turn of the session would get now (the intake's ack, or its `busy` answer). `unseen`: turns
   * the intake stored that have not reached a runner yet (`intakeBacklog.ts`); they take the free places
   * first, then wait. `patienceMs`: how long its submitter waits for it to complete; a turn that would
   * wait so long for a place, at the measured rate, that it ends later is refused `busy` rather than
   * stored to end after its submitter gave up.
   */
  preview(sessionId: string, tenant?: string, unseen = 0, patienceMs?: number): AdmissionPreview {
    const free = Math.max(0, this.limit - this.#running.size);
    const waiting = this.#queued + Math.max(0, unseen - free);
    if (waiting >= this.queueLimit) return { state: "busy", retryAfterMs: this.retryAfterMs(waiting) };
    if (unseen < free && this.#mayStart(sessionId, tenant) && !this.#waiting.has(sessionId))
      return { state: "running" };
    if (patienceMs !== undefined && (waiting + 1) / this.#startsPerMs + this.#meanRunMs > patienceMs) {
      // It fits once the queue is down to what starts within the patience less a run.
      const fits = Math.max(0, Math.floor((patienceMs - this.#meanRunMs) * this.#startsPerMs) - 1);
      return { state: "busy", retryAfterMs: this.#drainMs(waiting - fits) };
    }
    return { state: "queued", position: waiting + 1 };
  }

  /**
   * Asks a place for a turn of a session (of `tenant`, where tenants are
   * configured). `running`: it may start now. `queued`: it waits at `position`;
   * `whenAdmitted` resolves true when it may start (or is `admitNow`ed), false
   * when it was released while it waited.
   */
  request(sessionId: string, turnId: number, tenant?: string): { admitted: Admitted; whenAdmitted: Promise<boolean> } {
    if (tenant !== undefined) this.#tenants.set(sessionId, tenant);
    if (this.#mayStart(sessionId) && !this.#waiting.has(sessionId)) {
      this.#start(sessionId, turnId);
      return { admitted: { state: "running" }, whenAdmitted: Promise.resolve(true) };
    }
    const position = this.#queued + 1;
    const whenAdmitted = new Promise<boolean>((resolve) => {
      const queue = this.#waiting.get(sessionId);
      const waiting = { turnId, admit: resolve };
      if (queue) queue.push(waiting);
      else {
        this.#waiting.set(sessionId, [waiting]);
        this.#ring.push(sessionId);
      }
      this.#queued += 1;
    });
    return { admitted: { state: "queued", position }, whenAdmitted };
  }

  /**
   * Lets a turn start at once, over the limit if need be: a waiting turn that
   * was cancelled (it ends at once), one that must reach its session now
   * (`on_busy: interrupt`), or one taken over from a dead runner (late already).
   */
  admitNow(sessionId: string, turnId: number, tenant?: string): void {
    if (tenant !== undefined) this.#tenants.set(sessionId, tenant);
    const waiting = this.#removeWaiting(sessionId, turnId);
    this.#start(sessionId, turnId);
    waiting?.admit(true);
  }

  /** True when the turn waits for a place here. */
  isWaiting(sessionId: string, turnId: number): boolean {
    return this.#waiting.get(sessionId)?.some((waiting) => waiting.turnId === turnId) ?? false;
  }

  /** A turn ended, or is no longer this runner's (handed back): its place or its wait ends, and the next turn starts. */
  release(sessionId: string, turnId: number): void {
    const waiting = this.#removeWaiting(sessionId, turnId);
    if (waiting) {
      waiting.admit(false);
      return;
    }
    const turns = this.#running.get(sessionId);
    if (!turns?.delete(turnId)) return;
    const started = this.#startedAt.get(turnKey(sessionId, turnId));
    this.#startedAt.delete(turnKey(sessionId, turnId));
    if (started !== undefined) {
      const runMs = performance.now() - started;
      this.#meanRunMs = 0.9 * this.#meanRunMs + 0.1 * runMs;
      // The session still counts here: the turns that were running as this one ended, itself included.
      this.#meanRunning = 0.9 * this.#meanRunning + 0.1 * this.#running.size;
      this.#limit.sample(runMs, this.#running.size);
    }
    if (turns.size > 0) return;
    this.#running.delete(sessionId);
    const tenant = this.#tenants.get(sessionId);
    if (tenant !== undefined) this.#runningByTenant.set(tenant, (this.#runningByTenant.get(tenant) ?? 1) - 1);
    if (!this.#waiting.has(sessionId)) this.#tenants.delete(sessionId);
    this.#admitNext();
  }

  /**
   * How long a refused submitter should wait before trying again: the time the queue, `waiting` long,
   * takes at the measured rate to come back under half its limit (100 ms to 30 s).
   */
  retryAfterMs(waiting = this.#queued): number {
    return this.#drainMs(waiting - this.queueLimit / 2);
  }

  /** How long, at the measured rate, `turns` turns take to start (100 ms to 30 s). */
  #drainMs(turns: number): number {
    return Math.min(30_000, Math.max(100, Math.round(Math.max(1, turns) / this.#startsPerMs)));
  }

  #mayStart(sessionId: string, tenant = this.#tenants.get(sessionId)): boolean {
    if (this.#running.has(sessionId)) return false;
    if (this.#running.size >= this.limit) return false;
    const quota = this.limits.tenantQuota;
    return quota === undefined || tenant === undefined || (this.#runningByTenant.get(tenant) ?? 0) < quota;
  }

  #start(sessionId: string, turnId: number): void {
    const turns = this.#running.get(sessionId);
    this.#startedAt.set(turnKey(sessionId, turnId), performance.now());
    if (turns) {
      turns.add(turnId);
      return;
    }
    this.#running.set(sessionId, new Set([turnId]));
    const tenant = this.#tenants.get(sessionId);
    if (tenant !== undefined) this.#runningByTenant.set(tenant, (this.#runningByTenant.get(tenant) ?? 0) + 1);
  }

  /** Fills free places round-robin: the first session in the ring that may start gets one, then goes to the back. */
  #admitNext(): void {
    let tried = 0;
    while (this.#running.size < this.limit && this.#ring.length > 0 && tried < this.#ring.length) {
      const sessionId = this.#ring[0] as string;
      if (!this.#mayStart(sessionId)) {
        // Running already, or its tenant at quota: it keeps its turn in the ring and the next session is tried.
        this.#ring.push(this.#ring.shift() as string);
        tried += 1;
        continue;
      }
      tried = 0;
      const queue = this.#waiting.get(sessionId) as Waiting[];
      const next = queue.shift() as Waiting;
      this.#queued -= 1;
      this.#ring.shift();
      if (queue.length > 0) this.#ring.push(sessionId);
      else this.#waiting.delete(sessionId);
      this.#start(sessionId, next.turnId);
      next.admit(true);
    }
  }

  #removeWaiting(sessionId: string, turnId: number): Waiting | undefined {
    const queue = this.#waiting.get(sessionId);
    const index = queue?.findIndex((waiting) => waiting.turnId === turnId) ?? -1;
    if (!queue || index < 0) return undefined;
    const [waiting] = queue.splice(index, 1);
    this.#queued -= 1;
    if (queue.length === 0) {
      this.#waiting.delete(sessionId);
      this.#ring = this.#ring.filter((id) => id !== sessionId);
    }
    return waiting;
  }
}
