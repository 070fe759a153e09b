/** Milliseconds, monotonic within a process and close to wall-clock time across processes. */
export const monotonicNow = (): number => performance.timeOrigin + performance.now();
