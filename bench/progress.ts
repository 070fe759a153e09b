/** Progress lines on stderr, stamped with the time since the bench started (stdout stays clean). */
const started = performance.now();

export function progress(message: string): void {
  const seconds = (performance.now() - started) / 1000;
  const stamp = `${Math.floor(seconds / 60)}:${(seconds % 60).toFixed(1).padStart(4, "0")}`;
  process.stderr.write(`[bench ${stamp}] ${message}\n`);
}

/** Calls `tick` every `everyMs` until the returned function is called. */
export function ticker(tick: () => void, everyMs = 1_000): () => void {
  const timer = setInterval(tick, everyMs);
  return () => clearInterval(timer);
}
