import { ConclaveError } from "../../errors.ts";

/**
 * Work bounded by a budget and a signal, as a NATS request is: past
 * `timeoutMs` it rejects with `timeout`, and when `signal` fires first with
 * `cancelled`. The work is given a signal that fires in both cases; work
 * that ignores it is abandoned (its late result or failure is dropped).
 */
export async function withinBudget<T>(
  what: string,
  timeoutMs: number,
  signal: AbortSignal,
  work: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const timeout = AbortSignal.timeout(timeoutMs);
  const bounded = AbortSignal.any([signal, timeout]);
  let stop: (() => void) | undefined;
  const stopped = new Promise<never>((_, reject) => {
    stop = () =>
      reject(
        timeout.aborted && !signal.aborted
          ? new ConclaveError("timeout", `${what} did not answer within ${timeoutMs} ms`)
          : new ConclaveError("cancelled", `the run ended before ${what} answered`),
      );
    if (bounded.aborted) stop();
    else bounded.addEventListener("abort", stop, { once: true });
  });
  const running = work(bounded);
  // A late failure of abandoned work must not become an unhandled rejection.
  running.catch(() => {});
  try {
    return await Promise.race([running, stopped]);
  } finally {
    if (stop) bounded.removeEventListener("abort", stop);
  }
}
