/**
 * Deadlines, on the platform's own `AbortSignal.timeout` and `AbortSignal.any`:
 * a signal that fires when a call's time is up (or its caller gives up
 * first), and work bounded by one that rejects with the caller's own error.
 */

/** Longest delay a Node timer keeps: a longer one fires after 1 ms instead. */
export const MAX_TIMER_MS = 2_147_483_647;

/** A delay a timer can hold: NaN or negative is 0, past the limit is the limit. */
const clampDelay = (ms: number): number => (Number.isNaN(ms) ? 0 : Math.min(Math.max(0, Math.ceil(ms)), MAX_TIMER_MS));

/**
 * The timeout each merged signal was made with. Node before 24 lets
 * `AbortSignal.any` lose a timeout source to the garbage collector, and the
 * merged signal then never times out (nodejs/node#57736): this keeps the
 * timeout alive for as long as the signal made from it.
 */
const timeouts = new WeakMap<AbortSignal, AbortSignal>();

/**
 * A signal that fires `ms` from now, or as soon as `parent` fires. A delay
 * past what a timer can hold is cut to that (~24.8 days); a negative one or
 * NaN is 0. {@link timedOut} says which of the two fired.
 */
export function deadlineSignal(ms: number, parent?: AbortSignal): AbortSignal {
  const timeout = AbortSignal.timeout(clampDelay(ms));
  if (!parent) return timeout;
  const merged = AbortSignal.any([parent, timeout]);
  timeouts.set(merged, timeout);
  return merged;
}

/**
 * True when a signal from {@link deadlineSignal} fired because its time was
 * up, false when it has not fired or its parent fired first.
 */
export function timedOut(signal: AbortSignal): boolean {
  const timeout = timeouts.get(signal) ?? signal;
  return signal.aborted && timeout.aborted && signal.reason === timeout.reason;
}

/**
 * Settles as `promise` does, or rejects with the signal's reason as soon as
 * it fires: for work that does not stop promptly when told to (a client
 * that sleeps between retries without watching its signal). A late failure
 * of the abandoned promise is dropped.
 */
export function unlessAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const abort = () => reject(signal.reason);
    if (signal.aborted) abort();
    else signal.addEventListener("abort", abort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener("abort", abort));
  });
}

/** Waits `ms`, or less if the signal fires first; never rejects (a pause between retries). */
export function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => {
    const timer = setTimeout(done, clampDelay(ms));
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    if (signal?.aborted) return done();
    signal?.addEventListener("abort", done, { once: true });
  });
}

/** How {@link backoffMs} grows. */
export interface BackoffOptions {
  /** The first wait, at attempt 0. */
  baseMs: number;
  /** The longest wait (default: the longest a timer holds). */
  maxMs?: number;
}

/**
 * The wait before retry `attempt` (0 for the first): `baseMs` doubled at each
 * attempt, up to `maxMs`. The one place a retry's exponential backoff is written.
 */
export function backoffMs(attempt: number, { baseMs, maxMs = MAX_TIMER_MS }: BackoffOptions): number {
  return Math.min(maxMs, baseMs * 2 ** Math.min(Math.max(0, attempt), 30));
}

/** What {@link withDeadline} does beyond the deadline. */
export interface DeadlineOptions {
  /** The caller's signal: when it fires first, the work is told to stop too. */
  signal?: AbortSignal;
  /** The error when the caller's signal fires first (default: the signal's reason). */
  onAbort?: (reason: unknown) => unknown;
}

/**
 * Runs `work` within `ms`. When the time is up the work's signal fires and
 * the call rejects with what `onTimeout` returns (the caller's own error;
 * `onTimeout` is also where to drop a connection that stopped answering).
 * Work that ignores its signal is abandoned: its late result or failure is
 * dropped. As with `AbortSignal.timeout`, the deadline alone does not keep
 * the process alive: the work's own sockets or children do.
 */
export function withDeadline<T>(
  ms: number,
  work: (signal: AbortSignal) => Promise<T> | T,
  onTimeout: () => unknown,
  options: DeadlineOptions = {},
): Promise<T> {
  const { signal: parent, onAbort } = options;
  // A plain timer, cleared as soon as the work settles, and one controller: this runs once per request a
  // worker serves, where a timeout signal (whose timer outlives the call) and AbortSignal.any cost CPU and GC.
  const controller = new AbortController();
  return new Promise<T>((resolve, reject) => {
    let settled = false;
    const end = (): boolean => {
      if (settled) return false;
      settled = true;
      clearTimeout(timer);
      parent?.removeEventListener("abort", onParent);
      return true;
    };
    const stop = (error: () => unknown) => {
      if (!end()) return;
      let reason: unknown;
      try {
        reason = error();
      } catch (thrown) {
        reason = thrown;
      }
      controller.abort(reason);
      reject(reason);
    };
    const onParent = () => stop(() => (onAbort ? onAbort(parent?.reason) : parent?.reason));
    const timer = setTimeout(() => stop(onTimeout), clampDelay(ms));
    timer.unref();
    if (parent?.aborted) return onParent();
    parent?.addEventListener("abort", onParent, { once: true });
    // async: a work function that throws at once rejects like one that fails later.
    (async () => work(controller.signal))().then(
      (value) => {
        if (end()) resolve(value);
      },
      (error: unknown) => {
        if (end()) reject(error);
      },
    );
  });
}
