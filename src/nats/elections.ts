/**
 * Riding out a JetStream election. While a cluster elects a meta or stream leader (a node died, a
 * partition healed), JetStream answers requests with "jetstream is not enabled", "temporarily
 * unavailable", no responders or nothing at all (a timeout) for a few seconds — 6 to 15 s in the hostile
 * run of issue 34. A call that is safe to repeat (a publish with a message id, a compare-and-set, a read)
 * waits that out, bounded, instead of failing the caller at once.
 */
import { backoff } from "@nats-io/nats-core";
import { pause } from "../deadline.ts";
import { messageOf } from "../errors.ts";

/** How long a repeatable call waits for an election to end, by default: the longest outage the hostile run saw. */
export const ELECTION_PATIENCE_MS = 15_000;

/** Pauses between attempts: quick at first (most elections take a second or two), then every second. */
const PAUSES = backoff([50, 100, 250, 500, 1_000]);

const TRANSIENT =
  /jetstream (is )?not enabled|temporarily unavailable|no responders|timeout|timed out|leader(ship)? (not available|changed)|no suitable peers|insufficient resources|stream (is )?offline/i;

/**
 * True for an error JetStream gives while its cluster elects a leader or a node is out of reach: the
 * same call may succeed shortly. False for an answer (a conflict, a permission refused, bad input).
 */
export function isTransient(error: unknown): boolean {
  if (error instanceof Error && (error.name === "TimeoutError" || error.name === "NoRespondersError")) return true;
  const cause = error instanceof Error ? error.cause : undefined;
  if (cause instanceof Error && cause.name === "NoRespondersError") return true;
  return TRANSIENT.test(messageOf(error));
}

/** How a call rides out an election. */
export interface ElectionOptions {
  /** How long to keep trying. Default ELECTION_PATIENCE_MS. */
  patienceMs?: number;
  /** Which failures to try again. Default {@link isTransient}. */
  retryIf?: (error: unknown) => boolean;
  /** Stops waiting (the caller went away). */
  signal?: AbortSignal;
  /** Told of each failure that will be tried again, before the pause. */
  onRetry?: (error: unknown, attempt: number) => void;
}

/**
 * Calls `call` until it succeeds, fails with an error that is not transient, or `patienceMs` has passed
 * (then its last error is thrown). Only for calls that are safe to repeat.
 */
export async function throughElections<T>(call: () => Promise<T>, options: ElectionOptions = {}): Promise<T> {
  const deadline = Date.now() + (options.patienceMs ?? ELECTION_PATIENCE_MS);
  const retryIf = options.retryIf ?? isTransient;
  for (let attempt = 0; ; attempt++) {
    try {
      return await call();
    } catch (error) {
      const left = deadline - Date.now();
      if (!retryIf(error) || left <= 0 || options.signal?.aborted) throw error;
      options.onRetry?.(error, attempt);
      await pause(Math.min(PAUSES.backoff(attempt), left), options.signal);
    }
  }
}
