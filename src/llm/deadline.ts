/**
 * One call's cancellation: the caller's signal and the call's deadline merged into one signal.
 * The deadline is ours, not the openai client's, because the client's `timeout` stops at the
 * response headers (a streamed body could stall forever) and restarts on each retry.
 */
export class CallDeadline {
  readonly #controller = new AbortController();
  readonly #timer: NodeJS.Timeout;
  readonly #callerSignal: AbortSignal | undefined;
  readonly #onCallerAbort = () => this.#abort("aborted");
  #reason: "aborted" | "timeout" | undefined;

  constructor(
    readonly timeoutMs: number,
    callerSignal?: AbortSignal,
  ) {
    this.#callerSignal = callerSignal;
    this.#timer = setTimeout(() => this.#abort("timeout"), timeoutMs);
    if (callerSignal?.aborted) this.#abort("aborted");
    else callerSignal?.addEventListener("abort", this.#onCallerAbort, { once: true });
  }

  /** Aborts when the caller aborts or the deadline passes. */
  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  /** Why the signal fired, if it did. */
  get reason(): "aborted" | "timeout" | undefined {
    return this.#reason;
  }

  /**
   * Settles with `promise`, or rejects as soon as the signal fires. The openai client sleeps
   * between retries without watching the signal; this keeps aborts and deadlines prompt.
   */
  race<T>(promise: Promise<T>): Promise<T> {
    promise.catch(() => {}); // the loser of the race must not become an unhandled rejection
    if (this.signal.aborted) return Promise.reject(this.signal.reason);
    return new Promise<T>((resolve, reject) => {
      const onAbort = () => reject(this.signal.reason);
      this.signal.addEventListener("abort", onAbort, { once: true });
      promise.then(resolve, reject).finally(() => this.signal.removeEventListener("abort", onAbort));
    });
  }

  /** Stops the timer and lets go of the caller's signal; call when the call is over. */
  dispose(): void {
    clearTimeout(this.#timer);
    this.#callerSignal?.removeEventListener("abort", this.#onCallerAbort);
  }

  #abort(reason: "aborted" | "timeout"): void {
    if (this.#reason) return;
    this.#reason = reason;
    this.#controller.abort(new Error(reason === "timeout" ? `deadline of ${this.timeoutMs} ms passed` : "aborted"));
  }
}
