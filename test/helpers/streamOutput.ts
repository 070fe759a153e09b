import type { Readable } from "node:stream";
import { WaitTimeoutError } from "./wait.ts";

/**
 * A child process's output so far, and a wait for the first match of a pattern in it (from the
 * start): what a test of a long-running command (`conclave up`, `conclave dev`) reads it with.
 */
export function outputOf(stream: Readable, what = "conclave up's output") {
  let text = "";
  const waiting = new Set<() => void>();
  stream.on("data", (chunk: Buffer) => {
    text += chunk.toString();
    for (const check of waiting) check();
  });
  return {
    get text() {
      return text;
    },
    /** Resolves with the first match of `pattern` in the output (a pattern already matched resolves at once). */
    waitFor(pattern: RegExp, timeoutMs: number): Promise<RegExpExecArray> {
      return new Promise((resolve, reject) => {
        const check = () => {
          const match = pattern.exec(text);
          if (!match) return;
          waiting.delete(check);
          clearTimeout(timer);
          resolve(match);
        };
        const timer = setTimeout(() => {
          waiting.delete(check);
          reject(new WaitTimeoutError(`${pattern} in ${what}`, timeoutMs, text.slice(-600)));
        }, timeoutMs);
        waiting.add(check);
        check();
      });
    },
  };
}
