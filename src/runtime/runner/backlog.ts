import type { JetStreamManager } from "@nats-io/jetstream";
import { RUNNER_CONSUMER, streams } from "../../bus/subjects.ts";
import { pause } from "../../deadline.ts";
import type { Admission, AdmissionPreview } from "./admission.ts";

/** How old the WAL's backlog count may be before a submission reads it again (one read serves a burst). */
const BACKLOG_FRESH_MS = 100;
/** How long a submission waits for the backlog's count to be read before deciding from the last one. */
const READ_PATIENCE_MS = 50;
/** The shortest and longest retry-after hint a refused submitter gets. */
const RETRY_AFTER_BOUNDS_MS = [100, 30_000] as const;

/** What the intake's admission needs to know of the deployment. */
export interface BacklogOptions {
  /** Reads the WAL consumer's state: entries not yet delivered, and delivered but not yet acknowledged. */
  jsm: JetStreamManager;
  /** This runner's admission: its running limit, its mean run time, and what its own queue allows. */
  admission: Admission;
  /** How many runners share the WAL now (this one included). */
  liveRunners: () => number;
  /**
   * The longest a turn should wait for a place: the queue admits no more turns than the runners,
   * at their measured rate, start within it (`CONCLAVE_MAX_QUEUE_WAIT_MS`).
   */
  maxQueueWaitMs: number;
}

/** The numbers one admission decision is made from (all turns, across the runners sharing the WAL). */
export interface BacklogFacts {
  /** Turns accepted and not yet finished: stored in the WAL and not acknowledged. */
  backlog: number;
  /** Turns that may run at once across the runners. */
  running: number;
  /** Turns that may wait, across the runners: their queue limit, or what they start within the longest wait. */
  queueable: number;
  /** Turns the runners finish per second, measured (Little's law: places over mean run time). */
  ratePerSec: number;
}

/**
 * Pure: what a new submission gets, from the deployment's backlog. Up to the running places it starts;
 * then it waits at its position, as long as the queue holds; past that it is refused `busy`, with the time
 * the backlog takes to shrink by what is over.
 */
export function decideAdmission(facts: BacklogFacts): AdmissionPreview {
  const { backlog, running, queueable, ratePerSec } = facts;
  if (backlog < running) return { state: "running" };
  if (backlog < running + queueable) return { state: "queued", position: backlog - running + 1 };
  const overMs = ((backlog - running - queueable + 1) / Math.max(ratePerSec, 1e-3)) * 1_000;
  const [min, max] = RETRY_AFTER_BOUNDS_MS;
  return { state: "busy", retryAfterMs: Math.round(Math.min(max, Math.max(min, overMs))) };
}

/**
 * Admission at the intake, for bursts: a runner's own queue counts only the turns the WAL has delivered to it,
 * so a thousand submissions at once were all told `running` while they sat in the WAL. This counts every
 * turn accepted and not finished (the WAL consumer's pending and unacknowledged entries, read at most every
 * BACKLOG_FRESH_MS, plus those this intake admitted since), and bounds the queue by the runners' measured
 * rate: no more turns wait than start within `maxQueueWaitMs`, so admitted turns keep their latency and
 * the rest are told `busy` with a retry-after before anything is stored.
 */
export class WalBacklog {
  #counted = 0;
  #countedAt = Number.NEGATIVE_INFINITY;
  /** Turns this intake stored in the WAL since the count was read. */
  #storedSince = 0;
  /** Turns this intake admitted and has not stored (or given up on) yet: concurrent submissions see each other. */
  #reserved = 0;
  #reading: Promise<void> | undefined;

  constructor(private readonly options: BacklogOptions) {}

  /**
   * What a new turn of the session would get now: start, wait at a position, or `busy`. A turn not refused
   * holds a place in the count until the intake says it was stored (`stored`) or given up on (`withdrawn`).
   */
  async preview(sessionId: string, tenant?: string): Promise<AdmissionPreview> {
    // A read JetStream is slow to answer (an election, a cut link) never holds a submission past READ_PATIENCE_MS:
    // it is decided from the last count, and the read lands for the next one.
    if (performance.now() - this.#countedAt > BACKLOG_FRESH_MS)
      await Promise.race([this.#read(), pause(READ_PATIENCE_MS)]);
    // From here on synchronous: submissions of a burst, all waiting on one read, each see the ones before.
    const own = this.options.admission.preview(sessionId, tenant);
    if (own.state === "busy") return own;
    const decided = decideAdmission(this.facts());
    if (decided.state === "busy") return decided;
    this.#reserved += 1;
    // A session already running or waiting here waits behind its own turn, whatever the backlog.
    return decided.state === "running" ? own : decided;
  }

  /** An admitted turn was stored in the WAL: counted until the next read includes it. */
  stored(): void {
    this.#reserved = Math.max(0, this.#reserved - 1);
    this.#storedSince += 1;
  }

  /** An admitted turn was not stored after all (refused later, or the write failed): its place is free. */
  withdrawn(): void {
    this.#reserved = Math.max(0, this.#reserved - 1);
  }

  /** The numbers of the next decision, from the last read of the WAL's count. */
  facts(): BacklogFacts {
    const { admission, liveRunners, maxQueueWaitMs } = this.options;
    const runners = Math.max(1, liveRunners());
    const running = runners * admission.limit;
    const ratePerSec = (running / Math.max(admission.meanRunMs, 1)) * 1_000;
    const queueable = Math.min(runners * admission.limits.maxQueued, Math.floor((ratePerSec * maxQueueWaitMs) / 1_000));
    return {
      backlog: this.#counted + this.#storedSince + this.#reserved,
      running,
      queueable: Math.max(running, queueable),
      ratePerSec,
    };
  }

  /** One read at a time: a burst's submissions share it. */
  #read(): Promise<void> {
    this.#reading ??= (async () => {
      const before = this.#storedSince;
      try {
        const info = await this.options.jsm.consumers.info(streams.turns, RUNNER_CONSUMER);
        this.#counted = info.num_pending + info.num_ack_pending;
        this.#storedSince -= before; // those are in the count now
      } catch {
        // Unreadable (an election): decide from the last count and what was accepted since, and read again later.
      } finally {
        this.#countedAt = performance.now();
        this.#reading = undefined;
      }
    })();
    return this.#reading;
  }
}
