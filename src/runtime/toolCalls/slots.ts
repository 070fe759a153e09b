/**
 * A counting semaphore: a session's parallel tool-call slots. `take` waits
 * for a free slot (or rejects when the signal aborts) and resolves to the
 * slot's release, which is idempotent.
 */
export class Slots {
  #free: number;
  readonly #waiting: (() => void)[] = [];
  constructor(readonly size: number) {
    this.#free = size;
  }
  async take(signal: AbortSignal): Promise<() => void> {
    if (this.#free > 0) this.#free--;
    else
      await new Promise<void>((resolve, reject) => {
        const wake = () => {
          signal.removeEventListener("abort", stop);
          resolve();
        };
        const stop = () => {
          const index = this.#waiting.indexOf(wake);
          if (index >= 0) this.#waiting.splice(index, 1);
          reject(signal.reason);
        };
        signal.addEventListener("abort", stop, { once: true });
        this.#waiting.push(wake);
      });
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.#waiting.shift();
      if (next) next();
      else this.#free++;
    };
  }
  get busy(): boolean {
    return this.#free < this.size || this.#waiting.length > 0;
  }
}
